"""``mediagen_nb.form(model_id)``: a model's input form, built from its ``input_schema``.

Every behaviour is a plain method (``values``, ``validate``, ``price``, ``submit``, ``code``) that
tests and notebooks call directly; the widgets only call them. Validation is the client's own
``check_input`` (no request); the price is the listed one when the model's price never varies,
else a debounced ``estimate`` (never charges) repeated only when a priced input changes. Run
starts ``submit`` in a background thread, so the kernel stays responsive while it waits.
"""

import json
import keyword
import shlex
import threading
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from html import escape
from typing import Any, NamedTuple

import ipywidgets as widgets

from mediagen_nb.client import Client, Generation, GenerationError, MediagenError, Model, ValidationError
from mediagen_nb.client.ledger import via
from mediagen_nb.notebook import compat, parsing
from mediagen_nb.notebook.inputs import Field, build_field
from mediagen_nb.notebook.live import Ticker, reused_note
from mediagen_nb.notebook.prices import listed_price, price_inputs, quote, stand_in
from mediagen_nb.notebook.session import SESSION
from mediagen_nb.protocol import messages
from mediagen_nb.runtime.clock import REAL, Clock

DEBOUNCE_S = 0.6
# Parameters of Client.generate itself: inputs with these names go in an ``input`` dict instead.
GENERATE_ARGS = frozenset(Client.generate.__signature__.parameters) - {"fields"}
ONE_LINE_CALL = 100


def main_text_field(model: Model) -> str | None:
    """The input written as a cell body: ``prompt``, else ``text``, else the first required plain string.

    The rule is the magics' own (:func:`mediagen_nb.notebook.parsing.main_text_field`), so a form's
    cell reads back the same; properties that are not objects are left out of it.
    """
    props = model.properties if isinstance(model.properties, Mapping) else {}
    return parsing.main_text_field({n: p for n, p in props.items() if isinstance(p, Mapping)}, model.required)


class Code(NamedTuple):
    """A form's input as code: the ``%%generate`` cell and the equivalent Python call."""

    cell: str
    python: str

    def __str__(self) -> str:
        return f"{self.cell}\n\n# or in Python:\n{self.python}"


def _option(name: str, value: Any) -> list[str]:
    """``--name value`` words of a magic's option line (a list repeats the option, one per item).

    A value starting with ``-`` is written ``--name=value``, so it is not read as another option.
    """
    if isinstance(value, list):
        return [word for item in value for word in _option(name, item)]
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (int, float)):
        text = repr(value)
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value)
    if text.startswith("-"):
        return [shlex.quote(f"--{name}={text}")]
    return [f"--{name}", shlex.quote(text)]


def _python(value: Any) -> str:
    """``value`` as a Python literal (strings double-quoted, like the model id)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_python(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_python(str(k))}: {_python(v)}" for k, v in value.items()) + "}"
    return repr(value)


class _Progress:
    """The status line of a followed run: ``status · elapsed``, moving every second until stopped."""

    def __init__(self, line: widgets.HTML, clock: Clock) -> None:
        self.line = line
        self.status = "starting"
        self._ticker = Ticker(self._show, clock)
        self._show()

    def _show(self) -> None:
        elapsed = self._ticker.elapsed
        self.line.value = f'<span style="color:#555">&#8987; {escape(self.status)} · {elapsed:.1f} s</span>'

    def update(self, generation: Generation) -> None:
        """Take the latest reading (an ``on_update`` callback)."""
        self.status = generation.status
        self._show()

    def stop(self, text: str, ok: bool) -> None:
        """Stop ticking and leave ``text`` as the final line."""
        color, icon = ("#1a7f37", "&#10003;") if ok else ("#cf222e", "&#10007;")

        def final() -> None:
            self.line.value = f'<span style="color:{color}">{icon} {escape(text)}</span>'

        self._ticker.stop(final)


class Form:
    """A model's input form: fields from its schema, live price, Run, progress, result, history and code."""

    def __init__(
        self,
        model: str | Model,
        client: Client | None = None,
        *,
        debounce: float = DEBOUNCE_S,
        clock: Clock = REAL,
    ) -> None:
        """The form of ``model`` (a catalog id or a Model); ``client`` defaults to the current connection;
        ``clock`` times the price's debounce and the progress line."""
        self._client = client
        self.model = model if isinstance(model, Model) else self.client.model(model)
        self.debounce = debounce
        self.clock = clock
        self._props: Mapping[str, Any] = (
            self.model.properties if isinstance(self.model.properties, Mapping) else {}
        )
        required = set(self.model.required)
        main = main_text_field(self.model)  # several lines, as a cell's body
        self.fields: dict[str, Field] = {
            name: build_field(name, prop, name in required, main=name == main)
            for name, prop in self._props.items()
        }
        self.history: list[Generation] = []
        self._touched: set[str] = set()
        self._running = False
        self._run_lock = threading.Lock()
        self._prices: dict[tuple[tuple[str, str], ...], tuple[int, str]] = {}
        self._changes = 0  # priced-input changes so far: a pause for a price ends only for the latest
        self._changes_lock = threading.Lock()

        self.header = widgets.HTML(self._header())
        self.price_line = widgets.HTML(self._price_html(listed_price(self.model)))
        self.run_button = widgets.Button(description="Run", button_style="primary", icon="play")
        self.fresh = widgets.Checkbox(
            value=False,
            description="new variation",
            indent=False,
            layout=widgets.Layout(width="auto"),
        )
        compat.tooltip(
            self.fresh, "Off: the same input returns the earlier result at no charge. On: a new generation."
        )
        self.status = widgets.HTML()
        self.result = widgets.HTML()
        self.code_view = widgets.Textarea(layout=widgets.Layout(width="100%", height="9em"))
        self._history_box = widgets.VBox()
        self.history_view = compat.accordion(self._history_box, "history (0)")
        code_view = compat.accordion(self.code_view, "copy as code")
        self.widget = widgets.VBox(
            [
                self.header,
                *(field.widget for field in self.fields.values()),
                self.price_line,
                widgets.HBox([self.run_button, self.fresh, self.status]),
                self.result,
                code_view,
                self.history_view,
            ],
            layout=widgets.Layout(max_width="760px"),
        )
        for name, field in self.fields.items():
            field.observe(partial(self._changed, name))
        self.run_button.on_click(self._clicked)
        self._refresh()
        self._schedule_price()

    @property
    def client(self) -> Client:
        """The client given, else the process's current connection (``%mediagen use`` switches it)."""
        return self._client or SESSION.client

    def __repr__(self) -> str:
        return f"<Form {self.model.id}: {len(self.fields)} fields, {len(self.history)} results>"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The form's widget, with a plain-text form saying what to do where widgets do not show."""
        return compat.widget_bundle(self.widget, f"{self!r}\n{self._no_widgets()}\n\n{self.code()}")

    def _ipython_display_(self) -> None:
        """Shown as the form's widget, and under it a line that stays where no widget shows (a saved,
        exported or offline notebook), with the form's run as code."""
        compat.show(self.widget, repr(self), self._no_widgets(), str(self.code()))

    def _no_widgets(self) -> str:
        return (
            f"The form of {self.model.id}. No form above? This front end shows no widgets (a saved, "
            "exported or offline notebook): run the cell again in JupyterLab, Colab or VS Code, "
            "or run its copy as code:"
        )

    def _header(self) -> str:
        model = self.model
        where = f"on {self.client.settings.service_name}"
        facts = " · ".join(escape(str(f)) for f in (model.output_type, model.group, where) if f)
        return (
            f'<div style="font-family:sans-serif"><b>{escape(model.name or model.id)}</b> '
            f'<code>{escape(model.id)}</code> <span style="color:#555">{facts}</span>'
            f'<div style="color:#555;font-size:12px">{escape(model.description or "")}</div></div>'
        )

    @staticmethod
    def _price_html(text: str) -> str:
        return f"<div><b>price:</b> {escape(text)}</div>"

    # -- values and validation ------------------------------------------------------------------

    @property
    def values(self) -> dict[str, Any]:
        """The filled fields as typed values (defaults are prefilled, so they are included)."""
        values = {name: field.value for name, field in self.fields.items()}
        return {name: value for name, value in values.items() if value is not None}

    def set(self, **values: Any) -> "Form":
        """Fill fields by name (``form.set(prompt="...", quality="high")``); returns the form.

        A name the model does not have is refused (ValidationError), naming the nearest input.
        """
        unknown = [name for name in values if name not in self.fields]
        if unknown:
            message = messages.not_an_input(unknown[0], self.model.id, self.fields)
            raise ValidationError(message, field=unknown[0], sent=False)
        for name, value in values.items():
            self.fields[name].set(value)
        return self

    def _check(self, name: str, field: Field, values: Mapping[str, Any]) -> str | None:
        """The service's message for one field, from ``check_input`` on a schema of that field alone."""
        schema = {
            "type": "object",
            "properties": {name: field.prop},
            "required": [name] if field.required else [],
        }
        alone = replace(self.model, input_schema=schema)
        try:
            self.client.check_input(alone, {name: values[name]} if name in values else {})
        except ValidationError as exc:
            return exc.message
        except Exception:  # a schema shape the local checks do not know: the service judges it on Run
            return None
        return None

    def _problems(self) -> dict[str, str]:
        values = self.values
        problems = {
            name: field.problem or self._check(name, field, values) for name, field in self.fields.items()
        }
        return {name: message for name, message in problems.items() if message}

    def validate(self) -> dict[str, str]:
        """Check every field as the service would (no request), show the messages, enable Run only if none."""
        self._touched.update(self.fields)
        return self._refresh()

    def _refresh(self) -> dict[str, str]:
        """Messages under the fields changed so far, Run enabled when valid, the code view up to date."""
        problems = self._problems()
        for name, field in self.fields.items():
            field.show_error(problems.get(name) if name in self._touched else None)
        self.run_button.disabled = bool(problems) or self._running
        self.code_view.value = str(self.code())
        return problems

    def _changed(self, name: str) -> None:
        self._touched.add(name)
        self._refresh()
        self._schedule_price()

    # -- price ---------------------------------------------------------------------------------

    def _price_key(self) -> tuple[tuple[str, str], ...]:
        values = self.values
        return tuple(
            (n, json.dumps(values.get(n), sort_keys=True, default=str)) for n in price_inputs(self.model)
        )

    def price(self) -> tuple[int | None, str]:
        """Credits a run of the current input would charge and a line saying so; None when no true
        figure exists yet (the line then says which input the price waits for). Never charges.

        A model without ``pricing`` costs its listed credits: no request. Otherwise the service's
        estimate, cached per value of the inputs the price varies by; fields outside them that are
        empty or wrong are filled with stand-ins for the estimate alone (they do not change the price).
        """
        if self.model.pricing is None:
            return self.model.credits, listed_price(self.model)
        key = self._price_key()
        if key in self._prices:
            return self._prices[key]
        problems = self._problems()
        waiting = [name for name in price_inputs(self.model) if name in problems]
        asked = {name: value for name, value in self.values.items() if name not in problems}
        for name in problems:
            field = self.fields[name]
            if name in waiting or not field.required:
                continue  # an optional field left out is priced as the service prices its default
            substitute = stand_in(field.prop)
            if substitute is None:
                waiting.append(name)
            else:
                asked[name] = substitute
        if waiting:
            return None, f"{listed_price(self.model)}; set {', '.join(waiting)} for the exact price"
        try:
            estimate = self.client.estimate(self.model.id, asked)
        except MediagenError as exc:
            return None, f"{listed_price(self.model)}; no estimate ({exc.message})"
        self._prices[key] = (estimate.credits, quote(self.model, estimate))
        return self._prices[key]

    def _show_price(self) -> None:
        try:
            text = self.price()[1]
        except Exception as exc:  # runs on a timer thread, where a traceback would be lost: show it
            text = f"price unavailable ({exc})"
        self.price_line.value = self._price_html(text)

    def _schedule_price(self) -> None:
        """Show the price now when known, else estimate it once typing pauses for ``debounce`` seconds."""
        if self.model.pricing is None:
            return
        with self._changes_lock:
            self._changes += 1
            change = self._changes
            if self._price_key() in self._prices:
                self._show_price()
                return
        name = f"mediagen-price-{id(self):x}"
        threading.Thread(target=self._price_after_pause, args=(change,), name=name, daemon=True).start()

    def _price_after_pause(self, change: int) -> None:
        """Estimate the price once ``debounce`` seconds of the clock pass with no newer change."""
        self.clock.sleep(self.debounce)
        with self._changes_lock:
            if change != self._changes:
                return
        self._show_price()

    # -- running -------------------------------------------------------------------------------

    def submit(self, wait: bool = True, fresh: bool | None = None) -> Generation:
        """Run the model on the form's input, show progress and the result, add it to the history.

        The same input returns the earlier result at no charge unless ``fresh`` (default: the "new
        variation" box). ``wait=True`` follows the run to its end; ``wait=False`` returns it
        ``processing``. An invalid form raises ValidationError before anything is sent; a refused
        start or a failed run is shown in the form and raised (a MediagenError).
        """
        with self._run_lock:
            self._running = True
        try:
            return self._submit(wait, self.fresh.value if fresh is None else fresh)
        finally:
            self._running = False
            self._refresh()

    def _submit(self, wait: bool, fresh: bool) -> Generation:
        problems = self.validate()
        if problems:
            name, message = next(iter(problems.items()))
            error = ValidationError(message, field=name, sent=False)
            self._fail(error)
            raise error
        self.result.value = ""
        progress = _Progress(self.status, self.clock)
        try:
            with via("form"):
                if wait:
                    generation = self.client.generate(
                        self.model.id, self.values, reuse=True, fresh=fresh, on_update=progress.update
                    )
                else:
                    generation = self.client.run(self.model.id, self.values, reuse=True, fresh=fresh)
        except BaseException as exc:  # stop the ticking line whatever ended the run; then re-raise
            progress.stop(self._message(exc), ok=False)
            if isinstance(exc, GenerationError):
                self._add_result(exc.generation)
            raise
        elapsed = f" · {generation.elapsed_s:.1f} s" if generation.elapsed_s is not None else ""
        money = reused_note(generation) if generation.reused else f"{generation.credits_spent} credits"
        progress.stop(f"{generation.status}{elapsed} · {money}", ok=True)
        self._add_result(generation)
        return generation

    @staticmethod
    def _message(exc: BaseException) -> str:
        """A short line for an error (a failed run's reason, else the service's message)."""
        if isinstance(exc, GenerationError):
            return f"failed: {exc.generation.error}"
        return str(getattr(exc, "message", None) or exc)[:300]

    def _fail(self, exc: BaseException) -> None:
        self.status.value = f'<span style="color:#cf222e">&#10007; {escape(self._message(exc))}</span>'

    def _add_result(self, generation: Generation) -> None:
        """Show ``generation`` inline and at the top of this form's history; remember it in the session."""
        self.history.append(generation)
        SESSION.remember(generation)
        card = generation._repr_html_()
        self.result.value = card
        self._history_box.children = (widgets.HTML(card), *self._history_box.children)
        self.history_view.set_title(0, f"history ({len(self.history)})")

    def _clicked(self, _button: widgets.Button) -> None:
        """Run in a background thread, so the kernel stays responsive; a click while running is ignored."""
        with self._run_lock:
            if self._running:
                return
            self._running = True
        self.run_button.disabled = True
        threading.Thread(target=self._submit_in_background, name="mediagen-form-run", daemon=True).start()

    def _submit_in_background(self) -> None:
        try:
            self.submit()
        except Exception as exc:  # a thread's traceback would be lost: the form shows every failure
            self._fail(exc)

    # -- code ----------------------------------------------------------------------------------

    def code(self) -> Code:
        """The form's run as a ``%%generate`` cell (main text as the body) and as a Python call.

        Both reproduce the run the form makes: every input the form sends, schema defaults included
        (they are part of what is asked, so of the Idempotency-Key), in the same scope (``reuse``).
        So running the copy after the form reuses the form's generation at no charge.
        """
        values = self.values
        body_field = main_text_field(self.model)
        options = [w for name, value in values.items() if name != body_field for w in _option(name, value)]
        cell = " ".join(["%%generate", shlex.quote(self.model.id), *options])
        body = values.get(body_field) if body_field else None
        if body is not None:
            cell += "\n" + str(body)
        if all(
            name.isidentifier() and not keyword.iskeyword(name) and name not in GENERATE_ARGS
            for name in values
        ):
            args = [f"{name}={_python(value)}" for name, value in values.items()]
        else:
            args = [_python(values)]
        args = [json.dumps(self.model.id), *args, "reuse=True"]
        python = f"client.generate({', '.join(args)})"
        if len(python) > ONE_LINE_CALL:
            python = "client.generate(\n" + "".join(f"    {arg},\n" for arg in args) + ")"
        return Code(cell, python)

    def close(self) -> None:
        """Cancel a pending price estimate and close the form's widget."""
        with self._changes_lock:
            self._changes += 1
        self.widget.close()


def form(model_id: str | Model, client: Client | None = None) -> Form:
    """The input form of a catalog model (shown when it is a cell's last expression)."""
    return Form(model_id, client)
