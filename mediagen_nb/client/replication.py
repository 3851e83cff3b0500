"""The replication API: analyze a short video, build its blueprint, render and read a replica."""

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from mediagen_nb.client import errors
from mediagen_nb.client import ledger as ledgers
from mediagen_nb.client.catalog import Catalog
from mediagen_nb.client.checks import checked_id
from mediagen_nb.client.core import POLL_SECONDS, Core
from mediagen_nb.client.resources import Analysis, BlueprintBuild, ReplicationRun, wire_of
from mediagen_nb.client.starts import Recorded, Start, Starts, listed
from mediagen_nb.client.steps import START, Call, Op
from mediagen_nb.protocol import limits as spec_limits
from mediagen_nb.protocol import messages, schema, states
from mediagen_nb.protocol import replication as rules


def run_body(
    *,
    model_id: str | None = None,
    quality: str | None = None,
    accuracy: str | None = None,
    clips: list[int] | None = None,
    character_image: str | None = None,
    captions: bool | None = None,
    audio: str | Mapping[str, Any] | None = None,
    marketing_aspect: str | None = None,
) -> dict[str, Any]:
    """The replicate body of these options (omitted ones take the service's defaults), checked.

    ``audio`` is ``"chunks"``, ``"original"``, an https URL (an uploaded track) or the spec's object.
    Raises ValidationError (nothing sent) for what the service would refuse, so a typo costs nothing.
    """
    if isinstance(audio, str):
        audio = {"mode": audio} if audio in ("chunks", "original") else {"mode": "upload", "url": audio}
    body = {
        name: value
        for name, value in {
            "modelId": model_id,
            "quality": quality,
            "accuracy": accuracy,
            "clips": list(clips) if isinstance(clips, (list, tuple)) else clips,
            "characterImage": character_image,
            "captions": captions,
            "audio": dict(audio) if isinstance(audio, Mapping) else audio,
            "marketingAspect": marketing_aspect,
        }.items()
        if value is not None
    }
    try:
        rules.check_run_body(body)
    except schema.InputError as exc:
        raise errors.ValidationError(exc.message, field=exc.field, sent=False) from None
    return body


class Replication:
    """Operations of the replication API, over the core, the catalog and the paid start."""

    def __init__(self, core: Core, catalog: Catalog, starts: Starts) -> None:
        self.core, self.catalog, self.starts = core, catalog, starts
        self._settled: set[str] = set()  # ended runs whose charge a sandbox has told

    def analyze(
        self,
        url: str,
        *,
        idempotency_key: str | None = None,
        reuse: bool = False,
        fresh: bool = False,
        ledger: "ledgers.Ledger | str | None" = None,
    ) -> Op[Analysis]:
        """Start reading a short video into a blueprint (flat 5 credits).

        ``reuse=True`` returns an earlier analysis of the same link instead (no charge).
        """
        if not isinstance(url, str) or not url.strip():
            raise errors.ValidationError("url must be a link to a short video", field="url", sent=False)
        if not rules.is_https(url):
            raise errors.ValidationError(
                f"{messages.URL_MUST_BE_HTTPS}: {url[:80]!r} (a TikTok, YouTube or Instagram link, or a "
                "direct .mp4, .mov or .webm)",
                field="url",
                sent=False,
            )
        return (
            yield from self.starts.start(self._analysis_start(url, idempotency_key, reuse, fresh, ledger))
        )

    def analysis_of(self, url: str, *, ledger: "ledgers.Ledger | str | None" = None) -> Op[Analysis | None]:
        """The analysis an earlier start made of this link, read again (no charge); None if there is none."""
        return (yield from self.starts.earlier(self._analysis_start(url, None, True, False, ledger)))

    def _analysis_start(
        self, url: str, key: str | None, reuse: bool, fresh: bool, ledger: "ledgers.Ledger | str | None"
    ) -> Start[Analysis]:
        """The start of an analysis of ``url`` (flat price; an answer without a status has just begun)."""
        price = spec_limits.ANALYSIS_CREDITS
        asked = {"url": url}

        def recorded(analysis: Analysis, answer: Any, _: int | None) -> Recorded:
            charged = analysis.credits_spent if analysis.credits_spent is not None else price
            return Recorded(analysis.status or states.ANALYZING, charged, resource=answer)

        return Start(
            ledgers.ANALYSIS,
            f"the analysis of {url}",
            None,
            asked,
            request=lambda key: Call("POST", "analyze", START, body=asked, idempotency_key=key),
            parse=lambda data: Analysis.from_api({"sourceUrl": url, **data}),
            recorded=recorded,
            read=self.analysis,
            price=listed(price),
            key=key,
            reuse=reuse,
            fresh=fresh,
            ledger=ledger,
            new_statuses=(states.ANALYZING,),
        )

    def analysis(self, analysis_id: str) -> Op[Analysis]:
        """Read an analysis and its blueprint."""
        data = yield from self.core.send(
            Call("GET", "analysis", params={"id": checked_id(analysis_id, "analysis")})
        )
        analysis = Analysis.from_api(data)
        charged = 0 if analysis.status == states.FAILED else None
        yield from self.core.observed(analysis.id, analysis.status, credits=charged, error=analysis.error)
        return analysis

    def build_blueprint(self, analysis_id: str) -> Op[BlueprintBuild]:
        """Ask for clip prompts when only the shot list exists."""
        data = yield from self.core.send(
            Call("POST", "blueprint", params={"id": checked_id(analysis_id, "analysis")})
        )
        return BlueprintBuild.from_api(data, self.core.spelling.names)

    def wait_analysis(
        self,
        analysis: Analysis | str,
        *,
        build_blueprint: bool = True,
        poll: float = POLL_SECONDS,
        timeout: float | None = None,
        on_update: Callable[[Analysis], None] | None = None,
    ) -> Op[Analysis]:
        """Poll until the analysis is ready with clip prompts (building them if needed) or failed."""
        analysis_id = analysis.id if isinstance(analysis, Analysis) else str(analysis)
        reused = isinstance(analysis, Analysis) and analysis.reused
        asked = False

        def read() -> Op[Analysis]:
            nonlocal asked
            current = replace((yield from self.analysis(analysis_id)), reused=reused)
            waiting_prompts = current.blueprint is not None and not current.blueprint.has_prompts
            if current.status == states.READY and build_blueprint and waiting_prompts and not asked:
                yield from self.build_blueprint(analysis_id)
                asked = True
            return current

        def finished(current: Analysis) -> bool:
            waiting_prompts = current.blueprint is not None and not current.blueprint.has_prompts
            return current.status == states.FAILED or (
                current.status == states.READY and not (build_blueprint and waiting_prompts)
            )

        return (
            yield from self.core.poll(read, finished, poll, timeout, on_update, f"analysis {analysis_id}")
        )

    def replication_price(self, analysis: Analysis, body: Mapping[str, Any]) -> Op[int | None]:
        """At most what a render costs: its clips times the model's listed price (packing costs less)."""
        models = {m.id: m for m in (yield from self.catalog.models())}
        model = models.get(str(body.get("modelId", rules.DEFAULTS["modelId"])))
        clips = body.get("clips")
        count = len(set(clips)) if isinstance(clips, list) else analysis.clip_count
        if model is None or model.credits is None or count is None:
            return None
        return count * model.credits

    def replicate(
        self,
        analysis_id: str,
        *,
        model_id: str | None = None,
        quality: str | None = None,
        accuracy: str | None = None,
        clips: list[int] | None = None,
        character_image: str | None = None,
        captions: bool | None = None,
        audio: str | Mapping[str, Any] | None = None,
        marketing_aspect: str | None = None,
        webhook: str | None = None,
        idempotency_key: str | None = None,
        reuse: bool = False,
        fresh: bool = False,
        ledger: "ledgers.Ledger | str | None" = None,
    ) -> Op[ReplicationRun]:
        """Render a replica of a ready analysis (charged per clip as it renders; failed clips refunded)."""
        body = run_body(
            model_id=model_id,
            quality=quality,
            accuracy=accuracy,
            clips=clips,
            character_image=character_image,
            captions=captions,
            audio=audio,
            marketing_aspect=marketing_aspect,
        )
        asked = {"analysisId": str(analysis_id), **body}
        model = str(body.get("modelId", rules.DEFAULTS["modelId"]))
        sent = {**body, "webhook": webhook} if webhook is not None else body
        started = {"analysisId": str(analysis_id), "status": states.GENERATING, "quality": quality}

        def priced() -> Op[int | None]:
            return (yield from self.replication_price((yield from self.analysis(str(analysis_id))), body))

        def request(key: str) -> Call:
            params = {"id": checked_id(analysis_id, "analysis")}
            return Call("POST", "replicate", START, params=params, body=sent, idempotency_key=key)

        def recorded(run: ReplicationRun, answer: Any, price: int | None) -> Recorded:
            # Clips are charged as they render: the ledger keeps the most, until a read says the charge.
            return Recorded(run.status or states.GENERATING, price or 0, False, wire_of(run))

        return (
            yield from self.starts.start(
                Start(
                    ledgers.REPLICATION,
                    f"the replica of analysis {analysis_id} ({model})",
                    model,
                    asked,
                    request=request,
                    parse=lambda data: ReplicationRun.from_api({**started, **data}),
                    recorded=recorded,
                    read=self.replication_run,
                    price=priced,
                    key=idempotency_key,
                    reuse=reuse,
                    fresh=fresh,
                    ledger=ledger,
                    born=self._born,
                )
            )
        )

    def _born(self, run: ReplicationRun) -> Op[str | None]:
        """When a started run was made: its start answers only its id, so it is read once (free), for a
        replay made elsewhere to count as reuse."""
        data = yield from self.core.send(
            Call("GET", "replication_run", params={"id": checked_id(run.id, "run")})
        )
        created = data.get("createdAt") if isinstance(data, Mapping) else None
        return created if isinstance(created, str) else None

    def replication_run(self, run_id: str) -> Op[ReplicationRun]:
        """Read a replication run."""
        data = yield from self.core.send(
            Call("GET", "replication_run", params={"id": checked_id(run_id, "run")})
        )
        run = ReplicationRun.from_api(data)
        charged = None
        if run.done and run.id not in self._settled:
            charged = yield from self._sandbox_charge(run.id)
            if charged is not None:
                self._settled.add(run.id)
        yield from self.core.observed(run.id, run.status, credits=charged, error=run.error, resource=data)
        return run

    def _sandbox_charge(self, run_id: str) -> Op[int | None]:
        """What a sandbox charged for an ended run, net of refunds, read from its own ledger; else None.

        The run resource has no credits field (clips are charged as they render, failed ones refunded),
        so on the service the ledger keeps the start's estimate, marked unknown, and usage says so.
        """
        if self.core.sandbox_url() is None:
            return None
        try:
            data = yield from self.core.send(Call("GET", "sandbox_ledger", query={"resourceId": run_id}))
        except errors.MediagenError:
            return None
        entries = data.get("entries") if isinstance(data, Mapping) else None
        signs = {"charge": 1, "refund": -1}
        if not isinstance(entries, list) or not all(
            isinstance(e, Mapping) and type(e.get("credits")) is int and e.get("kind") in signs
            for e in entries
        ):
            return None
        net: int = sum(signs[e["kind"]] * e["credits"] for e in entries if e.get("resourceId") == run_id)
        return net

    def wait_replication(
        self,
        run: ReplicationRun | str,
        *,
        poll: float = POLL_SECONDS,
        timeout: float | None = None,
        marketing: float | None = None,
        on_update: Callable[[ReplicationRun], None] | None = None,
    ) -> Op[ReplicationRun]:
        """Poll until the run is done or failed; a done run's marketing cuts, which arrive after it,
        are waited for ``marketing`` service seconds more (default ``MEDIAGEN_MARKETING_WAIT``, 60; 0:
        not at all). A run returned without them says so (``marketing_coming``); read it again later."""
        run_id = run.id if isinstance(run, ReplicationRun) else str(run)
        reused = isinstance(run, ReplicationRun) and run.reused
        bound = self.core.parts.marketing_wait() if marketing is None else marketing

        def read() -> Op[ReplicationRun]:
            return replace((yield from self.replication_run(run_id)), reused=reused)

        ended = yield from self.core.poll(read, lambda r: r.done, poll, timeout, on_update, f"run {run_id}")
        if not ended.marketing_coming or bound <= 0:
            return ended

        def arrived(current: ReplicationRun) -> bool:
            return not current.marketing_coming

        try:
            return (yield from self.core.poll(read, arrived, poll, bound, on_update, f"run {run_id}'s cuts"))
        except errors.WaitTimeout as exc:
            last: ReplicationRun = exc.last
            return last  # done, and it says its cuts are still coming
