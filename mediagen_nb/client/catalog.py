"""The catalog, and inputs checked against it before anything is sent (local files uploaded first).

Operations of every API start here: the model's record (cached per client), the input checked with
the service's own messages, media URLs the service can read. Nothing in this module charges.
"""

import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mediagen_nb.client import errors, media, uploads
from mediagen_nb.client.checks import sendable
from mediagen_nb.client.config import LOOPBACK_NAMES
from mediagen_nb.client.core import Core
from mediagen_nb.client.media import extension as media_ext
from mediagen_nb.client.resources import Model
from mediagen_nb.client.steps import CATALOG, Call, Op, Record, records_here
from mediagen_nb.protocol import documents, messages, paging, schema, wire
from mediagen_nb.protocol.documents import KINDS
from mediagen_nb.protocol.environment import ENV_WIRE
from mediagen_nb.protocol.limits import LENGTH_BILLED_EXTENSIONS
from mediagen_nb.protocol.paths import path


class InputIgnored(UserWarning):
    """An input the spec says the model ignores was dropped rather than refused."""


def find_models(models: Iterable[Model], words: Sequence[str] = (), kind: str | None = None) -> list[Model]:
    """The models ``%mediagen models`` and ``mediagen models`` list, in catalog order.

    ``kind`` (or a bare ``image``, ``video`` or ``audio`` among ``words``, as in ``models video``)
    keeps the models of that output kind; every other word must appear in the id, name, description
    or group.
    """
    terms = [word.lower() for word in words]
    named = [term for term in terms if term in KINDS]
    if kind is None and named:
        kind = named[0]
        terms.remove(kind)
    return [
        m
        for m in models
        if (kind is None or m.output_type == kind)
        and all(term in f"{m.id} {m.name} {m.description} {m.group}".lower() for term in terms)
    ]


def model_named(client: Any, model_id: str, listing: str) -> Model:
    """``client.model(model_id)``; an unknown id is one NotFoundError line naming the nearest id and the
    command that lists them all (``listing``), not the catalog's 130 ids."""
    try:
        model: Model = client.model(model_id)
    except errors.NotFoundError as exc:
        if not exc.message.startswith("Model not found"):
            raise
        ids = [m.id for m in client.models()]
        raise errors.NotFoundError(404, messages.no_such_model(model_id, ids, listing)) from None
    return model


@dataclass(frozen=True)
class Measured:
    """A length-billed local file measured on this machine for an estimate (and not uploaded)."""

    field: str
    name: str  # the file's own name, for the estimate's billing text
    seconds: float


class Catalog:
    """The catalog's operations and the checks of an input against a model, over one core."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self._models: dict[str, Model] | None = None  # the catalog, read once per client
        self._details: dict[str, Model] = {}  # one model's record (with ``example``), by id
        self.pages: list[
            paging.Next
        ] = []  # how the last read of the list asked for each page after the first

    def models(self, refresh: bool = False) -> Op[list[Model]]:
        """Every catalog model (cached per client; ``refresh=True`` reads it again).

        An answer without the list, or a record without its id, output kind or listed cost, is a
        ServiceResponseError naming the field (never an empty or a free catalog); the names the spec
        does not show are learned from the answer where only one member can be meant (said once).
        """
        if self._models is None or refresh:
            records = yield from self._listed()
            names = self.core.spelling.names
            self._models = {m.id: m for m in (Model.from_api(r, names) for r in records)}
        return list(self._models.values())

    def _page(self, query: Mapping[str, str] | None) -> Op[tuple[list[Any], dict[str, Any]]]:
        """One page of the models list: its records, and its other members (beside the list and beside
        ``data``), where a next page is named."""
        body = yield from self.core.send(Call("GET", "models", CATALOG, query=query, whole=True))
        data = body["data"]
        records = self.core.spelling.model_list(data)
        page = {k: v for k, v in body.items() if k not in ("success", "data")}
        if isinstance(data, Mapping):
            page.update(data)
        return records, page

    def _listed(self) -> Op[list[Any]]:
        """Every record of the models list: its pages followed to the end, and the whole checked against
        the models ``llms.txt`` and ``openapi.json`` list (free reads). A list short of them that names
        no next page the client can follow is refused naming what is missing: never taken as the catalog.
        """
        spelling = self.core.spelling
        self.pages = []
        records, first = yield from self._page(None)
        documented = yield from self.documented()
        spelling.learn_records(records, {i: d.kind for i, d in (documented or {}).items()} or None)
        ids = _ids(records, spelling.names.model_id)
        records = yield from self._follow(records, first, ids)
        missing = yield from self._missing(set(ids), documented)
        if missing and not spelling.is_confirmed("models_next"):
            records = yield from self._guess(records, first, ids)
            missing = yield from self._missing(set(ids), documented)
        if missing:
            raise _short(len(ids), missing, first, spelling.names)
        return records

    def _follow(self, records: list[Any], page: Mapping[str, Any], ids: list[str]) -> Op[list[Any]]:
        """``records`` and those of every page after ``page``, as long as one names the next."""
        names = self.core.spelling.names
        url = self.core.settings.base_url + path("models")
        count = len(records)
        for _ in range(paging.MAX_PAGES):
            try:
                nxt = paging.follow(page, names, url, count)
            except paging.PagingError as exc:
                raise errors.ServiceResponseError(
                    f"the models list: {exc}", field=names.models_next
                ) from None
            if nxt is None:
                return records
            self.pages.append(nxt)
            more, page = yield from self._page(nxt.params)
            fresh = [r for r, i in zip(more, _ids(more, names.model_id), strict=True) if i not in ids]
            if not fresh:
                raise errors.ServiceResponseError(
                    f"the models list's {nxt.member} named a next page ({_query(nxt.params)}), but that page "
                    f'repeats models already read: set {wire.setting("models_next_param")} = "<the query '
                    f'parameter the service reads it from>" in a names file ({ENV_WIRE})',
                    field=nxt.member,
                )
            ids += _ids(fresh, names.model_id)
            records = [*records, *fresh]
            count = len(more)
        raise errors.ServiceResponseError(
            f"the models list went on for {paging.MAX_PAGES} pages: "
            "is MEDIAGEN_BASE_URL the service's address?"
        )

    def _guess(self, records: list[Any], first: Mapping[str, Any], ids: list[str]) -> Op[list[Any]]:
        """Try each way the first page may name the next one (:func:`paging.guesses`, a few free reads);
        one that brings new models is learned (said once) and followed to the end."""
        spelling = self.core.spelling
        for guess in paging.guesses(first, spelling.names)[:GUESSES]:
            try:
                more, page = yield from self._page(guess.params)
            except errors.MediagenError:
                continue
            fresh = [
                r for r, i in zip(more, _ids(more, spelling.names.model_id), strict=True) if i not in ids
            ]
            if fresh:
                self.pages.append(guess)
                [(param, _)] = guess.params.items()
                spelling.learn("models_next", guess.member, "the member naming the list's next page")
                spelling.learn("models_next_param", param, "the query parameter of the list's next page")
                ids += _ids(fresh, spelling.names.model_id)
                return (yield from self._follow([*records, *fresh], page, ids))
        return records

    def _missing(self, ids: set[str], documented: "dict[str, documents.Listed] | None") -> Op[list[str]]:
        """Models the service's documents list that the list does not (llms.txt when it lists every model
        of the list, else openapi.json's input schemas)."""
        if documented and ids <= set(documented):
            return [i for i in documented if i not in ids]
        try:
            inputs = documents.openapi_inputs((yield from self.openapi()))
        except errors.MediagenError:
            return []
        return [i for i in inputs if i not in ids] if inputs else []

    def documented(self) -> Op["dict[str, documents.Listed] | None"]:
        """The models ``llms.txt`` lists (a free read), or None when it cannot be read."""
        try:
            text = yield from self.llms_txt()
        except errors.MediagenError:
            return None
        return documents.llms_models(text) or None

    def model(self, model_id: str, refresh: bool = False) -> Op[Model]:
        """One catalog model, with ``example`` when the service has one (cached per client)."""
        if model_id not in self._details or refresh:
            data = yield from self.core.send(Call("GET", "model", CATALOG, params={"id": model_id}))
            try:
                self._details[model_id] = Model.from_api(data, self.core.spelling.names)
            except errors.ServiceResponseError:
                if self._models is not None:
                    raise
                yield from self.models()  # the whole list tells how its records are spelled
                self._details[model_id] = Model.from_api(data, self.core.spelling.names)
        return self._details[model_id]

    def openapi(self) -> Op[dict[str, Any]]:
        """The service's OpenAPI 3.1 document."""
        document: dict[str, Any] = yield from self.core.send(Call("GET", "openapi", CATALOG))
        return document

    def llms_txt(self) -> Op[str]:
        """Model ids, output types and required inputs as plain text."""
        text: str = yield from self.core.send(Call("GET", "llms_txt", CATALOG))
        return text

    def catalog_model(self, model_id: str) -> Op[Model]:
        """The catalog's record of ``model_id``; an unknown id is refused before anything is sent."""
        if not isinstance(model_id, str):
            raise errors.ValidationError(
                f"model_id must be a catalog id such as 'gpt-image-2', not {model_id!r}",
                field="modelId",
                sent=False,
            )
        models = {m.id: m for m in (yield from self.models())}
        if model_id not in models:
            raise errors.ValidationError(
                messages.unknown_model(str(model_id), models), field="modelId", sent=False
            )
        return models[model_id]

    def attach(self, model: Model, values: Mapping[str, Any]) -> Op[dict[str, Any]]:
        """``values`` with each local file of a media field replaced by a URL the service can read.

        The upload is blocking I/O, so it runs as a Record step (off an event loop). Anything but an
        object is passed on as it is, for :meth:`check_input` to refuse.
        """
        if not isinstance(values, Mapping):
            return values
        out = dict(values)
        keys = self.core.settings.keys
        auth = self.core.settings.auth(keys[0] if keys else None)  # for a sandbox's uploads
        for position, (name, index, file, kind) in enumerate(local_items(model, values)):
            if position == 0:  # the embedded sandbox proves it is the user's before a file is sent
                yield Record(partial(self.core.settings.check, now=True))
            url = yield Record(partial(uploads.upload, name, file, self.core.sandbox_url(), kind, auth))
            _put(out, name, index, url)
        return out

    def attach_now(self, model: Model, values: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`attach` in the calling thread (a sweep's rows are planned there)."""
        return records_here(self.attach(model, values))

    def stand_ins(self, model: Model, values: Mapping[str, Any]) -> tuple[dict[str, Any], Measured | None]:
        """``values`` with each local file replaced by a URL no one can read (an estimate uploads
        nothing), and the length-billed file, when local, measured here (blocking I/O: a Record step)."""
        out, measured = dict(values), None
        for name, index, file, kind in local_items(model, values):
            found = uploads.checked_file(name, file, kind)
            _put(out, name, index, uploads.stand_in(file, found))
            if name == model.length_billed_field:
                ext = media_ext(file, found)
                seconds = media.measure_seconds(file, ext)
                if seconds is None:
                    said = (
                        messages.UNREADABLE_VIDEO_DURATION
                        if ext == ".mp4"
                        else messages.unreadable_audio_duration()
                    )
                    raise errors.ValidationError(
                        f"{said}: the length of {file.name} cannot be read here, and a run would refuse it; "
                        "give a whole .mp3, .wav or .mp4 file",
                        field=name,
                        sent=False,
                    )
                measured = Measured(name, file.name, seconds)
        return out, measured

    def check_input(
        self, model: Model, values: Mapping[str, Any], *, extra_inputs: bool = False
    ) -> dict[str, Any]:
        """Refuse, before any request, what the service would refuse; return the input to send.

        A name the model's schema does not have is refused too, naming the nearest input: the
        service would ignore it and charge for a run with the default. ``extra_inputs=True`` sends
        such names as they are.
        """
        if not isinstance(values, Mapping):
            raise errors.ValidationError(messages.INPUT_NOT_OBJECT, field="input", sent=False)
        props = model.properties if isinstance(model.properties, Mapping) else None
        ignored = schema.IGNORED_INPUTS.get(model.id, {})
        dropped = [name for name in values if name in ignored and (props is None or name not in props)]
        if dropped:
            for name in dropped:
                warnings.warn(f"mediagen_nb: {ignored[name]}: {name} is not sent", InputIgnored, stacklevel=4)
            values = {name: value for name, value in values.items() if name not in dropped}
        unknown = [name for name in values if props is not None and name not in props]
        if unknown and not extra_inputs:
            name = str(unknown[0])
            raise errors.ValidationError(
                f"{messages.not_an_input(name, model.id, props or ())} (extra_inputs=True sends it anyway)",
                field=name,
                sent=False,
            )
        billed = model.length_billed_field
        try:
            normalized = schema.normalize(model.input_schema, values)
            value = values.get(billed) if billed is not None else None
            if billed is not None and not schema.is_missing(value) and uploads.local_file(value) is None:
                schema.check_media_extension(billed, value)  # a local file's is its format's: below
        except schema.InputError as exc:
            prop = model.properties.get(exc.field)
            options = prop.get("enum") if isinstance(prop, Mapping) else None
            hint = messages.nearest_option(values.get(exc.field), options) if options else ""
            raise errors.ValidationError(exc.message + hint, field=exc.field, sent=False) from None
        checked = {name: normalized[name] for name in values}
        sendable(checked)
        for name, prop in model.properties.items():
            if name in checked and isinstance(prop, Mapping) and (kind := schema.media_kind(prop)):
                items = checked[name] if isinstance(checked[name], list) else [checked[name]]
                for url in items:
                    local = uploads.local_file(url)
                    if local is None:
                        self.check_media_url(name, url)
                        continue
                    found = uploads.checked_file(name, local, kind)  # media of its kind, uploaded later
                    sent_as = media_ext(local, found)
                    if name == billed and sent_as not in LENGTH_BILLED_EXTENSIONS:
                        raise errors.ValidationError(
                            f"{messages.UNSUPPORTED_MEDIA_FORMAT}: {name}: {local.name} is sent as "
                            f"{sent_as}; {model.id} takes {', '.join(LENGTH_BILLED_EXTENSIONS)}",
                            field=name,
                            sent=False,
                        )
        return checked

    def check_media_url(self, name: str, url: Any) -> None:
        """Only public https media URLs are sent; a sandbox reached over plain http may serve its own.

        The service downloads media inputs itself, so anything else would be refused or could leak.
        """
        parts = urlsplit(url) if isinstance(url, str) else None
        host = (parts.hostname or "") if parts else ""
        base = urlsplit(self.core.settings.base_url)
        local = base.scheme == "http" and (host == base.hostname or host in LOOPBACK_NAMES)
        if parts is None or not host or not (parts.scheme == "https" or (parts.scheme == "http" and local)):
            raise errors.ValidationError(
                f"{name} must be a public https URL the service can download, not {str(url)[:80]!r}",
                field=name,
                sent=False,
            )


GUESSES = 24  # free reads spent guessing how a page names the next, at most


def _ids(records: list[Any], name: str) -> list[str]:
    """The ids of records (a record without one is refused when it is read: here it is kept apart)."""
    return [str(wire.get(r, name)) if isinstance(r, Mapping) else repr(r) for r in records]


def _query(params: Mapping[str, str]) -> str:
    return "&".join(f"{k}={str(v)[:40]}" for k, v in params.items())


def _short(
    count: int, missing: list[str], page: Mapping[str, Any], names: wire.Names
) -> errors.ServiceResponseError:
    """The refusal of a models list short of the service's documents."""
    shown = ", ".join(missing[:5]) + (", …" if len(missing) > 5 else "")
    others = [m for m in page if m != wire.top(names.models_list)]
    offered = (
        f"its answer's other members ({', '.join(others[:8])}) name no next page the client can follow"
        if others
        else "its answer names no next page"
    )
    return errors.ServiceResponseError(
        f"the models list holds {count} models, but the service's llms.txt and openapi.json list "
        f"{count + len(missing)} ({len(missing)} not in the list: {shown}); {offered}: if one of them names "
        f'the next page, set {wire.setting("models_next")} = "<that member>" and '
        f'{wire.setting("models_next_param")} = "<the query parameter it is sent back as>" in a names file '
        f"({ENV_WIRE}; `mediagen doctor` tries each and prints the lines)",
        field=names.models_list,
    )


def local_items(model: Model, values: Mapping[str, Any]) -> Iterator[tuple[str, int | None, Path, str]]:
    """Each local file among ``values``' media fields: its field, its place in a list (or None), its
    path, and the medium the field takes."""
    for name, prop in model.properties.items():
        kind = schema.media_kind(prop) if isinstance(prop, Mapping) else None
        if name not in values or kind is None:
            continue
        value = values[name]
        for index, item in enumerate(value) if isinstance(value, list) else [(None, value)]:
            path = uploads.local_file(item)
            if path is not None:
                yield name, index, path, kind


def _put(values: dict[str, Any], name: str, index: int | None, url: str) -> None:
    if index is None:
        values[name] = url
    else:
        values[name] = [*values[name][:index], url, *values[name][index + 1 :]]
