"""How this client spells the names the spec does not show: ours, a names file's, or learned from answers.

A names file (``MEDIAGEN_WIRE=names.toml``, the format ``mediagen sandbox --wire`` reads) sets them.
Where a name is not set and an answer leaves only one member it can be (the one list of records in
the models answer; the one record field whose values are all image, video or audio; the one integer
of every record, or of an estimate), the client uses that member and says once which it used. Anything
else missing is a ServiceResponseError naming the field, what was found and the setting: no missing
value is ever read as 0, None or an empty catalog.
"""

import re
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from mediagen_nb.client.errors import ServiceResponseError
from mediagen_nb.client.resources.fields import Field, members, unshown
from mediagen_nb.protocol import wire
from mediagen_nb.protocol.environment import ENV_WIRE

KINDS = frozenset({"image", "video", "audio"})  # a model's output kind
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")  # an id as the catalog's: no spaces, no slashes


class SpellingLearned(UserWarning):
    """The client met a name the spec does not show spelled otherwise, and uses that spelling."""


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Spelling:
    """The names one client reads answers and writes bodies by (see the module); shared by its parts."""

    def __init__(
        self, names: wire.Names = wire.DEFAULT, given: frozenset[str] = frozenset(), source: str | None = None
    ) -> None:
        self.names = names
        self.given = given  # the attributes a names file set: never learned over
        self.source = source  # that file, for messages
        self.learned: dict[str, str] = {}  # attribute -> the spelling learned from an answer
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        where = f" from {self.source}" if self.source else ""
        return f"<Spelling{where} learned={self.learned}>"

    def learn(self, attribute: str, spelled: str, evidence: str) -> None:
        """Use ``spelled`` for ``attribute`` from now on, and say so once."""
        with self._lock:
            if getattr(self.names, attribute) == spelled:
                return
            ours = getattr(self.names, attribute)
            changed: dict[str, Any] = {attribute: spelled}
            self.names = replace(self.names, **changed)
            self.learned[attribute] = spelled
        warnings.warn(
            f"mediagen_nb: the service sends {evidence} as {spelled!r}, not {ours!r}: using {spelled!r} "
            f"(to set it, {wire.setting(attribute)} = {spelled!r} in a names file, {ENV_WIRE}=names.toml)",
            SpellingLearned,
            stacklevel=2,
        )

    def _learnable(self, attribute: str) -> bool:
        return attribute not in self.given

    # -- the models answer ---------------------------------------------------------------------------

    def model_records(self, data: Any) -> list[Any]:
        """The records of a models answer (``data`` is an object holding the list, or the list itself)."""
        if isinstance(data, list):
            records = data
        else:
            name = self.names.models_list
            field = unshown(self.names, "models_list")
            if name not in data:
                lists = [k for k, v in data.items() if isinstance(v, list) and all(_is_record(i) for i in v)]
                if len(lists) != 1 or not self._learnable("models_list") or not data[lists[0]]:
                    raise ServiceResponseError(
                        f"the service's models answer has no {name} list of models (data's members: "
                        f"{members(data)}): {field.hint()}",
                        field=name,
                    )
                self.learn("models_list", lists[0], "the list of models")
                name = lists[0]
            records = data[name]
            if not isinstance(records, list):
                raise ServiceResponseError(
                    f"the service sent data.{name} = {str(records)[:60]!r}, not a list of models: "
                    f"{field.hint()}",
                    field=name,
                )
        if not records:
            raise ServiceResponseError(
                "the service listed no models at all, and its catalog is never empty: is MEDIAGEN_BASE_URL "
                "the service's address? (`mediagen doctor` shows what it sends)",
                field=self.names.models_list,
            )
        recognised = [r for r in records if _is_record(r)]
        if len(recognised) == len(records):
            self._learn_record_names(recognised)
        return records

    def _learn_record_names(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Learn the names of a record's id, output kind and listed cost, each when no record has ours
        and exactly one member of every record can be it."""
        self._learn_member(records, "model_id", "each model's id", _ids)
        self._learn_member(records, "model_output_type", "each model's output kind", _kinds)
        self._learn_member(records, "model_credits", "each model's listed cost", _wholes)

    def _learn_member(
        self,
        records: Sequence[Mapping[str, Any]],
        attribute: str,
        evidence: str,
        fits: Callable[[Sequence[Any]], bool],
    ) -> None:
        name = getattr(self.names, attribute)
        if any(name in record for record in records) or not self._learnable(attribute):
            return  # ours is there (a record without it is refused when it is read), or it was set
        taken = {getattr(self.names, attr) for attr in wire.TABLES["catalog"]} | set(wire.SHOWN_RECORD_FIELDS)
        shared = set(records[0]).intersection(*records[1:]) - taken
        found = [member for member in records[0] if member in shared and fits([r[member] for r in records])]
        if len(found) == 1:
            self.learn(attribute, found[0], evidence)

    # -- the estimate answer -------------------------------------------------------------------------

    def estimate_data(self, data: Mapping[str, Any], model_id: str) -> Mapping[str, Any]:
        """An estimate answer, its credits, model and billing names learned when unambiguous (the one
        integer; the one text that is the model asked; the one other text)."""
        names = self.names
        if names.estimate_credits not in data and self._learnable("estimate_credits"):
            wholes = [k for k, v in data.items() if _whole(v)]
            if len(wholes) == 1:
                self.learn("estimate_credits", wholes[0], "an estimate's credits")
        if names.estimate_model not in data and self._learnable("estimate_model"):
            same = [k for k, v in data.items() if v == model_id]
            if len(same) == 1:
                self.learn("estimate_model", same[0], "the model an estimate priced")
        names = self.names
        if names.estimate_billing not in data and self._learnable("estimate_billing"):
            texts = [k for k, v in data.items() if isinstance(v, str) and k != names.estimate_model]
            if len(texts) == 1:
                self.learn("estimate_billing", texts[0], "how an estimate is billed")
        return data

    def field(self, attribute: str) -> Field:
        """The field ``attribute`` names now (for messages)."""
        return unshown(self.names, attribute)


def _is_record(value: Any) -> bool:
    return isinstance(value, Mapping)


def _ids(values: Sequence[Any]) -> bool:
    return all(isinstance(v, str) and _ID.match(v) for v in values) and len(set(values)) == len(values)


def _kinds(values: Sequence[Any]) -> bool:
    return all(isinstance(v, str) and v in KINDS for v in values)


def _wholes(values: Sequence[Any]) -> bool:
    return all(_whole(v) for v in values)


def from_file(path: str | None) -> Spelling:
    """The spelling of a names file (None: ours); a file that cannot be used is a ConfigurationError."""
    from mediagen_nb.client.errors import ConfigurationError

    if path is None:
        return Spelling()
    try:
        names, given = wire.load(path)
    except wire.WireError as exc:
        raise ConfigurationError(f"{exc} ({ENV_WIRE})") from None
    return Spelling(names, given, path)
