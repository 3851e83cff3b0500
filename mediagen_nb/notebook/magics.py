"""The magics: ``%%generate``, ``%generate``, ``%replicate``, ``%%make_video`` and ``%mediagen``.

Every failure of a magic, a refused option or start, a failed generation, analysis, replica or
video, is one line in the cell's output (``GenerationFailed: gpt-image-2 failed: ...``): an error, so
the cell fails and Run All (or nbval) stops there, without a traceback. ``--no-raise`` keeps a failed
generation's cell green. IPython's own ``{var}`` expansion is off for these magics: ``{{name}}`` is ours.

Money: a start from a magic is keyed by what it asks (model and input; the link for an analysis),
so running the same cell again returns the earlier result at no charge and says so; ``--fresh``
asks for a new variation. A Ctrl-C keeps what was started, in ``-o NAME``, the history and the
ledger, and the re-run picks it up.

Each magic's own options are declared with IPython's ``@magic_arguments`` (``%generate?`` lists
them); the words they leave are the model's fields.
"""

import getpass
import sys
from collections.abc import Callable
from typing import Any, cast

from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import Bool, Int, TraitError, Unicode, observe

from mediagen_nb.notebook import options, parsing, replicas
from mediagen_nb.notebook.cells import (
    Compared,
    MagicError,
    Started,
    follow,
    follow_all,
    friendly,
    model_of,
    money,
    output_name,
    raise_unless,
    store,
    video_summary,
)
from mediagen_nb.notebook.live import describe
from mediagen_nb.notebook.options import (
    ESTIMATE,
    FLOW,
    FRESH,
    KINDS,
    NO_CAPTIONS,
    NO_MUSIC,
    NO_RAISE,
    OUTPUT,
    SUBCOMMANDS,
)
from mediagen_nb.notebook.session import SESSION, colab_secret
from mediagen_nb.notebook.tables import HistoryTable, ModelTable, UsageTable
from mediagen_nb.protocol.messages import did_you_mean


@magics_class
class MediagenMagics(Magics):
    """Generation, replication and topic-to-video from a cell.

    Defaults are traitlets: ``%config MediagenMagics.quality = "low"`` sets one for the kernel,
    ``%config MediagenMagics`` lists them, and a cell's own options always win.
    """

    model = Unicode(
        "", help="The model of %%generate / %generate when the line names none, e.g. gpt-image-2."
    ).tag(config=True)
    quality = Unicode(
        "", help="The quality of models that have a quality input, when the cell does not set one."
    ).tag(config=True)
    wait = Bool(
        True, help="Follow each generation to its end; False returns it running (like --no-wait)."
    ).tag(config=True)
    raise_on_failure = Bool(
        True, help="A failed generation, analysis, replica or video fails its cell; False is --no-raise."
    ).tag(config=True)
    fresh = Bool(
        False, help="Always start anew instead of reusing an earlier result of the same input (--fresh)."
    ).tag(config=True)
    preview_width = Int(320, help="Width in pixels of the images and videos shown with results.").tag(
        config=True
    )

    def update_config(self, config: Any) -> None:
        """``%config MediagenMagics.fresh = 'yes'``: a value a setting cannot take is refused with one
        line on stderr and the setting kept (IPython's ``%config`` only logs it, so it went unseen)."""
        mine = config.get(type(self).__name__, {})
        traits = self.traits(config=True)
        for name, value in mine.items():
            if name not in traits:
                continue  # an unknown name: traitlets warns about it itself
            try:
                cast(Any, traits[name]).validate(self, value)  # every concrete trait type has it
            except TraitError:
                print(
                    f"UsageError: MediagenMagics.{name} must be {traits[name].info()}, not {value!r}; "
                    f"it stays {getattr(self, name)!r}",
                    file=sys.stderr,
                )
                return
        super().update_config(config)

    @observe("preview_width")
    def _width_changed(self, change: Any) -> None:
        from mediagen_nb.client.previews import preview_width

        preview_width(change["new"])

    # -- %%generate / %generate ------------------------------------------------------------

    @no_var_expand
    @line_cell_magic
    @friendly
    @magic_arguments()
    @OUTPUT
    @ESTIMATE
    @argument("--no-wait", action="store_true", help="Return the generation running.")
    @FRESH
    @NO_RAISE
    @argument("--extra-inputs", action="store_true", help="Send fields the model does not have, as text.")
    def generate(self, line: str, cell: str | None = None) -> Any:
        """%%generate MODEL [--field value ...] [-o NAME] [--estimate] [--no-wait] [--fresh]  (body: the text)
        %generate MODEL field=value ... [-o NAME] [--estimate] [--no-wait] [--fresh]

        The same model and input return the earlier generation at no charge; --fresh makes a new one.
        A field the model does not have is refused; --extra-inputs sends such fields as text.
        MODEL may be several, ``gpt-image-2,flare-1-pro``: each gets the inputs it has (the others are
        not sent to it, said once), and the results show side by side (-o NAME: a dict by model)."""
        from mediagen_nb.client.ledger import via

        words = parsing.split(line)
        if (not words or words[0].startswith("-") or "=" in words[0]) and self.model:
            words = [self.model, *words]  # %config MediagenMagics.model
        if not words:
            raise MagicError("usage: %%generate MODEL [--field value ...] [-o NAME] [--estimate] [--no-wait]")
        client = SESSION.client
        ids = list(dict.fromkeys(part.strip() for part in words[0].split(",") if part.strip()))
        if not ids:
            raise MagicError(f"{words[0]!r}: give a model id, or several as a,b")
        models = [model_of(client, model_id) for model_id in ids]
        namespace = self._user_ns
        flags, rest = options.read(MediagenMagics.generate, words[1:], namespace)
        if len(models) > 1:
            return self._compare(models, flags, rest, cell)
        model = models[0]
        extra = bool(flags["extra_inputs"])
        inputs = parsing.parse_fields(
            rest,
            model.id,
            model.properties,
            options.names(MediagenMagics.generate),
            namespace,
            pairs=cell is None,
            extra_inputs=extra,
        ).inputs
        output_name(flags)
        if cell is not None and cell.strip():
            main = parsing.main_text_field(model.properties, model.required)
            if main is None:
                raise MagicError(f"{model.id} has no text input for the cell body; use --field value options")
            inputs[main] = parsing.interpolate(cell.strip("\n"), namespace)
        if self.quality and "quality" in model.properties and "quality" not in inputs:
            inputs["quality"] = self.quality
        self._defaults(flags)
        if flags["estimate"]:
            return store(self.shell, flags, client.estimate(model.id, inputs, extra_inputs=extra))

        def steps(started: Started) -> None:
            with via("magic"):
                fresh = bool(flags["fresh"])
                started.update(client.run(model.id, inputs, reuse=True, fresh=fresh, extra_inputs=extra))
            if not flags["no_wait"] and not started.item.done:
                started.update(client.wait(started.item, on_update=started.update))

        def summary(result: Any) -> tuple[str, bool]:
            failed = result.status == "failed"  # a failed run's creditsSpent is the amount refunded
            cost = money(result) + (" refunded" if failed and not result.reused else "")
            return f"{describe(result)} · {cost}", not failed

        return raise_unless(flags, follow(self.shell, flags, model.id, steps, summary))

    def _compare(self, models: list[Any], flags: dict[str, Any], rest: list[str], cell: str | None) -> Any:
        """``%%generate a,b``: one input for several models, every start first, then each followed."""
        from mediagen_nb.batch.plan import one_input
        from mediagen_nb.client.ledger import via

        client = SESSION.client
        namespace = self._user_ns
        extra = bool(flags["extra_inputs"])
        union: dict[str, Any] = {}
        for model in models:
            for name, prop in model.properties.items():
                union.setdefault(name, prop)
        label = ", ".join(model.id for model in models)
        inputs = parsing.parse_fields(
            rest,
            label,
            union,
            options.names(MediagenMagics.generate),
            namespace,
            pairs=cell is None,
            extra_inputs=extra,
        ).inputs
        output_name(flags)
        shared, notes = ({m.id: dict(inputs) for m in models}, []) if extra else one_input(models, inputs)
        text = parsing.interpolate(cell.strip("\n"), namespace) if cell is not None and cell.strip() else None
        for model in models:
            if text is not None:
                main = parsing.main_text_field(model.properties, model.required)
                if main is None:
                    raise MagicError(
                        f"{model.id} has no text input for the cell body; use --field value options"
                    )
                shared[model.id][main] = text
            if self.quality and "quality" in model.properties and "quality" not in shared[model.id]:
                shared[model.id]["quality"] = self.quality
        for note in notes:
            print(f"mediagen: {note}")
        self._defaults(flags)
        if flags["estimate"]:
            priced = Compared({m.id: client.estimate(m.id, shared[m.id], extra_inputs=extra) for m in models})
            return store(self.shell, flags, priced)
        fresh = bool(flags["fresh"])

        def start(model_id: str) -> Callable[[], Any]:
            def started() -> Any:
                with via("magic"):
                    return client.run(model_id, shared[model_id], reuse=True, fresh=fresh, extra_inputs=extra)

            return started

        def summary(result: Any) -> tuple[str, bool]:
            failed = result.status == "failed"
            cost = money(result) + (" refunded" if failed and not result.reused else "")
            return f"{describe(result)} · {cost}", not failed

        results = follow_all(
            self.shell,
            flags,
            {m.id: start(m.id) for m in models},
            lambda item, update: client.wait(item, on_update=update),
            summary,
        )
        if results.failed and not flags.get("no_raise"):
            from IPython.display import display

            display(results)  # every model's result stays in sight above the error
            raise MagicError(
                f"{', '.join(results.failed)} did not succeed (see above); the results are kept"
                + (f" in {flags['output']}" if flags.get("output") else ""),
                "GenerationFailed",
            )
        return results

    @property
    def _user_ns(self) -> dict[str, Any]:
        """The kernel's namespace (these magics are only ever registered on a shell)."""
        assert self.shell is not None
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace

    def _own(self, magic: Any, words: list[str], name: str) -> dict[str, Any]:
        """The options of a magic that takes no model fields: any other word is refused, named."""
        flags, rest = options.read(magic, words, self._user_ns)
        parsing.parse_fields(rest, name, {}, options.names(magic), self._user_ns)  # refuses what is left
        return flags

    def _defaults(self, flags: dict[str, Any]) -> None:
        """The kernel's defaults (``%config MediagenMagics``) under the cell's own flags."""
        if not self.wait:
            flags["no_wait"] = True
        if not self.raise_on_failure:
            flags["no_raise"] = True
        if self.fresh:
            flags["fresh"] = True

    # -- %replicate -------------------------------------------------------------------------

    @no_var_expand
    @line_magic
    @friendly
    @magic_arguments()
    @OUTPUT
    @argument("--model", help="The video model of the replica.")
    @argument("--quality", help="low, medium or high.")
    @argument("--accuracy", help="fast, balanced or exact.")
    @argument("--clips", help="The clips to render, counted from 0: 0,2,5.")
    @argument("--captions", action="store_true", help="Burn in captions.")
    @argument("--audio", help="chunks, original, or the URL of a track.")
    @argument("--character", help="An image of the character to put in every clip.")
    @argument("--marketing-aspect", help="9:16 or 16:9.")
    @ESTIMATE
    @argument("--analyze", action="store_true", help="Only analyze (5 credits) and show the plan.")
    @FRESH
    @NO_RAISE
    def replicate(self, line: str) -> Any:
        """%replicate URL [--model ID] [--quality q] [--accuracy a] [--clips 0,2,5] [--captions]
        [--audio chunks|original|URL] [--character IMAGE] [--marketing-aspect 9:16|16:9]
        [--estimate] [--analyze] [--fresh] [-o NAME]

        Every option is checked before anything is paid. An earlier analysis of the same link is
        reused (no charge); --estimate prices the render without paying for an analysis; --analyze
        only analyzes (5 credits) and shows the plan."""
        from mediagen_nb.client.errors import WorkFailed
        from mediagen_nb.client.ledger import via
        from mediagen_nb.client.replication import run_body

        words = parsing.split(line)
        if not words or words[0].startswith("-"):
            raise MagicError("usage: %replicate URL [--model ...] [--quality ...] [--clips 0,2,5] [-o NAME]")
        url = str(parsing.interpolate_value(words[0], self._user_ns))
        flags = self._own(MediagenMagics.replicate, words[1:], "replicate")
        output_name(flags)
        self._defaults(flags)
        render = {  # Client.replicate's own options, refused by its rule before the analysis charges 5
            "model_id": flags["model"],
            "quality": flags["quality"],
            "accuracy": flags["accuracy"],
            "clips": replicas.clips(flags["clips"]),
            "character_image": flags["character"],
            "captions": True if flags["captions"] else None,
            "audio": flags["audio"],
            "marketing_aspect": flags["marketing_aspect"],
        }
        run_body(**render)
        client = SESSION.client
        if flags["estimate"]:
            return replicas.estimate(self.shell, client, url, render, flags)

        def steps(started: Started) -> None:
            with via("replication"):
                started.update(client.analyze(url, reuse=True))
                started.update(client.wait_analysis(started.item, on_update=started.update))
                analysis = started.item
                if analysis.status == "failed":
                    raise WorkFailed(analysis)  # its 5 credits were refunded
                replicas.show_plan(
                    self.shell, analysis, render, table=bool(flags["analyze"]) or not analysis.reused
                )
                if flags["analyze"]:
                    return
                run = client.replicate(analysis.id, **render, reuse=True, fresh=bool(flags["fresh"]))
                started.update(run)
                started.update(client.wait_replication(run, on_update=started.update))

        def summary(result: Any) -> tuple[str, bool]:
            if flags["analyze"]:
                return f"analysis ready; nothing rendered (--analyze) · {money(result)}", True
            return f"{describe(result)} · {money(result)}", result.status == "done"

        return raise_unless(flags, follow(self.shell, flags, "replicate", steps, summary))

    # -- %%make_video -------------------------------------------------------------------------

    @no_var_expand
    @cell_magic
    @friendly
    @magic_arguments()
    @OUTPUT
    @argument("--seconds", help="The target length, from 20 to 180 seconds.")
    @argument("--gender", help="man or woman.")
    @argument("--look", help="creator, newscaster or pixar.")
    @argument("--voice", help="A voice of video_options().")
    @FLOW
    @NO_CAPTIONS
    @NO_MUSIC
    @ESTIMATE
    @FRESH
    @NO_RAISE
    def make_video(self, line: str, cell: str) -> Any:
        """%%make_video [--seconds 45] [--gender man|woman] [--look creator|newscaster|pixar] [--voice NAME]
        [--flow STYLE] [--no-captions] [--no-music] [--estimate] [--fresh] [-o NAME]   (body: the topic)"""
        from mediagen_nb.client.ledger import via

        flags = self._own(MediagenMagics.make_video, parsing.split(line), "make_video")
        output_name(flags)
        seconds = flags["seconds"]
        try:
            seconds = float(seconds) if seconds is not None else None
        except ValueError:
            raise MagicError(f"--seconds {seconds!r}: give a number from 20 to 180") from None
        client = SESSION.client
        if flags["estimate"]:
            return store(self.shell, flags, client.video_estimate(seconds))
        topic = parsing.interpolate(cell.strip(), self._user_ns) or None

        def steps(started: Started) -> None:
            with via("topic-to-video"):
                job = client.make_video(
                    topic,
                    seconds=seconds,
                    gender=flags["gender"],
                    look=flags["look"],
                    voice=flags["voice"],
                    flow=flags["flow"],
                    captions=False if flags["no_captions"] else None,
                    music=False if flags["no_music"] else None,
                    reuse=True,
                    fresh=bool(flags["fresh"]),
                )
                started.update(job)
                started.update(client.wait_job(job, on_update=started.update))

        return raise_unless(flags, follow(self.shell, flags, "make_video", steps, video_summary))

    # -- %mediagen ----------------------------------------------------------------------------

    @no_var_expand
    @line_magic
    @friendly
    def mediagen(self, line: str) -> Any:
        """%mediagen models [--kind image|video|audio] [TEXT] | model ID | estimate MODEL field=value ...
        | key | use sandbox|service | usage | balance | sign-in | budget [N|balance|off] | history
        | reedit JOB --flow STYLE [--no-captions] [--no-music]"""
        words = parsing.split(line)
        command, rest = (words[0], words[1:]) if words else ("help", [])
        handlers = {
            "models": self._cmd_models,
            "model": self._cmd_model,
            "estimate": self._cmd_estimate,
            "key": self._cmd_key,
            "use": self._cmd_use,
            "usage": self._cmd_usage,
            "budget": self._cmd_budget,
            "balance": self._cmd_balance,
            "sign-in": self._cmd_sign_in,
            "history": self._cmd_history,
            "reedit": self._cmd_reedit,
            "help": self._cmd_help,
        }
        if command not in handlers:
            raise MagicError(
                f"%mediagen {command}: unknown command{did_you_mean(command, SUBCOMMANDS)} "
                f"(commands: {', '.join(SUBCOMMANDS)})"
            )
        return handlers[command](rest)

    def _cmd_help(self, words: list[str]) -> None:
        print(MediagenMagics.mediagen.__doc__)

    @magic_arguments("%mediagen models")
    @argument("--kind", help="image, video or audio.")
    def _cmd_models(self, words: list[str]) -> Any:
        """The catalog's models, of one kind, whose text has every word given."""
        from mediagen_nb.client.catalog import find_models

        flags, text = options.read(MediagenMagics._cmd_models, words, self._user_ns)
        kind = flags["kind"]
        if "--kind" in words and kind not in KINDS:
            raise MagicError(f"--kind {kind!r}: use image, video or audio")
        unknown = [word for word in text if word.startswith("-")]
        if unknown:
            raise MagicError(
                f"%mediagen models: unknown option {unknown[0]}; use --kind image|video|audio [TEXT]"
            )
        return ModelTable(find_models(SESSION.client.models(), text, kind))

    def _cmd_model(self, words: list[str]) -> Any:
        if len(words) != 1:
            raise MagicError("usage: %mediagen model ID")
        return model_of(SESSION.client, words[0])

    def _cmd_estimate(self, words: list[str]) -> Any:
        if not words:
            raise MagicError("usage: %mediagen estimate MODEL field=value ...")
        client = SESSION.client
        model = model_of(client, words[0])
        fields = parsing.parse_fields(words[1:], model.id, model.properties, (), self._user_ns, pairs=True)
        return client.estimate(model.id, fields.inputs)

    def _cmd_key(self, words: list[str]) -> None:
        """Colab's secret MEDIAGEN_API_KEY when there is one, else ask without echoing; the key goes
        into the client only, never the notebook."""
        from mediagen_nb.client import Client, settings

        key = colab_secret(settings.ENV_KEY) or getpass.getpass("MEDIAGEN API key (pk_live_...): ").strip()
        if not key:
            raise MagicError("no key entered; nothing changed")
        base_url = (
            settings.base_url()
            or colab_secret(settings.ENV_BASE_URL)
            or input("Service base URL (the spec's {base_url}): ").strip()
        )
        client = SESSION.use(Client(key, base_url=base_url or None))
        del key
        print(
            f"mediagen: every magic, form and sweep now uses {client.settings.service_name} "
            f"with key {client.settings.keys[0].fingerprint} (fingerprint)"
        )

    def _cmd_use(self, words: list[str]) -> None:
        if words not in (["sandbox"], ["service"]):
            raise MagicError("usage: %mediagen use sandbox|service")
        client = SESSION.use(words[0])
        print(f"mediagen: every magic, form and sweep now uses {client.settings.service_name}")

    def _cmd_usage(self, words: list[str]) -> Any:
        """This month's runs and credits by model and path, from the ledger (no balance endpoint exists)."""
        from mediagen_nb.batch.usage import usage

        return UsageTable(usage(SESSION.client))

    def _cmd_budget(self, words: list[str]) -> Any:
        """``%mediagen budget 500`` caps what this kernel may spend; ``off`` removes it; alone, shows it."""
        from mediagen_nb.client import budget

        if not words:
            return budget()
        if len(words) != 1:
            raise MagicError("usage: %mediagen budget [N|balance|off]")
        if words[0] in ("off", "none"):
            return budget(None)
        if words[0] == "balance":  # what the account has left now
            return budget("balance")
        if not words[0].isdigit():
            raise MagicError(
                f"%mediagen budget {words[0]!r}: give a whole number of credits, balance, or off"
            )
        return budget(int(words[0]))

    def _cmd_balance(self, words: list[str]) -> Any:
        """What the account has left and spent this month (check_usage), beside this machine's ledger."""
        from mediagen_nb.client.balance import balance

        return balance(SESSION.client)

    def _cmd_sign_in(self, words: list[str]) -> None:
        """Sign in to the agent server with OAuth where it takes no key: a link, then the code pasted back."""
        from mediagen_nb.client.signin import sign_in

        print(sign_in())

    def _cmd_history(self, words: list[str]) -> Any:
        from mediagen_nb.client.assemble import shared_ledger
        from mediagen_nb.notebook.tables import charged_by

        client = SESSION.client
        return HistoryTable(list(SESSION.history), charged_by(shared_ledger(), client.settings.where))

    @magic_arguments("%mediagen reedit")
    @OUTPUT
    @FLOW
    @NO_CAPTIONS
    @NO_MUSIC
    def _cmd_reedit(self, words: list[str]) -> Any:
        """Re-cut a finished video with another edit style (a new job)."""
        from mediagen_nb.client.ledger import via

        if not words:
            raise MagicError(
                "usage: %mediagen reedit JOB --flow STYLE [--no-captions] [--no-music] [-o NAME]"
            )
        target = parsing.interpolate_value(words[0], self._user_ns)
        if isinstance(target, str) and target in self._user_ns:
            target = self._user_ns[target]
        job_id = getattr(target, "id", target)
        flags = self._own(MediagenMagics._cmd_reedit, words[1:], "reedit")
        output_name(flags)
        client = SESSION.client

        def steps(started: Started) -> None:
            with via("topic-to-video"):
                job = client.reedit(
                    str(job_id),
                    flow=flags["flow"],
                    captions=False if flags["no_captions"] else None,
                    music=False if flags["no_music"] else None,
                )
                started.update(job)
                started.update(client.wait_job(job, on_update=started.update))

        return raise_unless(flags, follow(self.shell, flags, "reedit", steps, video_summary))


def load(shell: Any) -> None:
    """Register the magics and their tab completion on ``shell``."""
    magics = MediagenMagics(shell=shell)
    shell.register_magics(magics)
    if magics not in shell.configurables:  # so %config MediagenMagics lists and sets its defaults
        shell.configurables.append(magics)
    options.complete_on(shell)
