"""The replication backend: analyses of a link into a blueprint, and runs that render it take by take.

Rules the spec leaves open, chosen here (every draw is seeded by the sandbox seed; link rules are in
``links.py``, blueprints in ``blueprint.py``, takes and their prices in ``takes.py``):

* Length. A direct file is downloaded and measured; one that cannot be downloaded is refused with
  ``video URL is not reachable``, one whose length cannot be read with ``Could not read the video
  duration``. A platform video's length is drawn from its URL: 12 to 90 seconds, or 125 to 600 seconds
  (refused as too long) when the URL's path or query has the word ``long``.
* Shot list only: an analysis of a URL with the word ``shots`` in its path or query, and of one in four
  other URLs (seeded by the URL), is ``ready`` with every clip ``prompt`` null until
  ``POST .../blueprint`` has written them. Building the blueprint is free.
* Takes render one after another, each charged as it starts. A take the model fails, or that meets the
  generation time limit, is refunded and fails the run; takes already rendered stay charged and later
  takes never start. When the balance (or the key's monthly cap) cannot cover the next take, the run
  fails with the ``Not enough credits`` (or key cap) message naming what the remaining takes need. The
  start call itself needs the balance and the cap to cover the first take.
* Model outcome faults are drawn by the start call: one for an analysis, one per take in take order.
* Simulated timing: analysis 20 s + 0.75 s per source second; blueprint build 15 s + 2 s per clip; a take
  the model's run time (``catalog.simulated_runtime``); stitching 10 s + 0.25 s per second of replica;
  the marketing cuts arrive 8 s after ``done``. Idempotency-Keys are kept 24 simulated hours.
"""

import asyncio
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from mediagen_nb.protocol import limits, messages, schema, states, wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import catalog, fetch, lifecycle, moderation, pricing
from mediagen_nb.sandbox.accounts import Caller
from mediagen_nb.sandbox.media import MediaSpec
from mediagen_nb.sandbox.media.vector import NotDrawable
from mediagen_nb.sandbox.replication.blueprint import TITLES, build_blueprint
from mediagen_nb.sandbox.replication.links import Source, classify, probe, words
from mediagen_nb.sandbox.replication.resources import Analysis, Run, RunRequest, run_request
from mediagen_nb.sandbox.replication.takes import MULTI_SHOT_MODELS, Take, pack, take_input
from mediagen_nb.sandbox.responses import bad_request
from mediagen_nb.sandbox.saved import Row, Rows, marked

if TYPE_CHECKING:
    from mediagen_nb.sandbox.world import World

PLATFORM_SECONDS = (12.0, 90.0)
LONG_PLATFORM_SECONDS = (125.0, 600.0)
SHOTS_ONLY_SHARE = 0.25
ANALYSIS_BASE_SECONDS, ANALYSIS_PER_SECOND = 20.0, 0.75
BLUEPRINT_BASE_SECONDS, BLUEPRINT_PER_CLIP = 15.0, 2.0
MARKETING_DELAY_SECONDS = 8.0
ANALYSIS, RUN = "analysis", "run"  # their rows in the saved state
SIZES = {"9:16": (180, 320), "16:9": (320, 180)}


class ReplicationBackend:
    """Every analysis and replication run of the sandbox."""

    def __init__(self, world: "World") -> None:
        self.world = world
        self.analyses: dict[str, Analysis] = {}
        self.runs: dict[str, Run] = {}
        retention = limits.IDEMPOTENCY_RETENTION_SECONDS
        self.analysis_keys = lifecycle.Idempotency(world.clock, retention=retention)
        self.run_keys = lifecycle.Idempotency(world.clock, retention=retention)
        # Ids made or changed since the state was saved.
        self.unsaved_analyses: set[str] = set()
        self.unsaved_runs: set[str] = set()

    def dump(self) -> Iterator[Row]:
        """The analyses and runs made or changed since the last dump, and the keys of new starts, as saved
        rows."""
        yield from marked(ANALYSIS, self.unsaved_analyses, self.analyses)
        yield from marked(RUN, self.unsaved_runs, self.runs)
        yield from self.analysis_keys.dump(ANALYSIS)
        yield from self.run_keys.dump(RUN)

    def load(self, rows: Rows) -> None:
        """Take back the saved analyses, runs and keys (:meth:`dump`); their callers are the accounts'."""
        caller, models = self.world.accounts.caller, self.world.catalog
        for data in rows.get(ANALYSIS, {}).values():
            self.analyses[data["id"]] = Analysis.from_dict(data, caller(data["caller"]))
        for data in rows.get(RUN, {}).values():
            analysis = self.analyses[data["analysisId"]]
            self.runs[data["id"]] = Run.from_dict(data, analysis, caller(data["caller"]), models)
        self.analysis_keys.load(rows, ANALYSIS)
        self.run_keys.load(rows, RUN)

    def resume(self) -> None:
        """After a restart from saved state: every pending analysis, build and run step fires again."""
        for analysis in self.analyses.values():
            if analysis.status == states.ANALYZING or analysis.build_at is not None:
                self._schedule_settle(analysis)
        for run in self.runs.values():
            if run.status != states.FAILED and run.marketing_video_url is None:
                self._schedule_advance(run)

    def _schedule_settle(self, analysis: Analysis) -> None:
        """Settle ``analysis`` when it is ready and when its blueprint build ends."""
        now = self.world.clock.now()
        for at in (analysis.ready_at, analysis.build_at):
            if at is not None:
                self.world.schedule(at - now, lambda: self.settle(analysis))

    def _schedule_advance(self, run: Run) -> None:
        """Advance ``run`` at each moment a take starts or ends, it is done, and its marketing cuts arrive."""
        now = self.world.clock.now()
        for at in lifecycle.moments(run.takes, run.done_at, run.done_at + MARKETING_DELAY_SECONDS):
            self.world.schedule(at - now, self._advancer(run))

    # --- analyses

    async def analyze(
        self, caller: Caller, url: Any, *, idempotency_key: str | None, at_capacity: bool, base_url: str
    ) -> tuple[Analysis, bool]:
        """``POST /v1/analyze``: link rules, the Idempotency-Key, then length, cap, balance and charge."""
        source = classify(url)

        async def create() -> str:
            return await self._create_analysis(caller, source, at_capacity, base_url)

        analysis_id, created = await self.analysis_keys.once(caller.account.id, idempotency_key, create)
        return self.analyses[analysis_id], created

    async def _measure(self, source: Source) -> tuple[float, str]:
        """The source's length in seconds and frame shape: measured for a file, drawn for a platform link."""
        if source.platform is None:
            try:
                data = await fetch.download(source.url, self.world.own_file)
            except fetch.Unreachable:
                raise bad_request(messages.media_not_reachable("video")) from None
            seconds, aspect = await asyncio.to_thread(probe, data, schema.url_extension(source.url))
            if seconds is None:
                raise bad_request(messages.UNREADABLE_VIDEO_DURATION)
            return seconds, aspect or source.aspect
        rng = self.world.rng("source", source.url)
        low, high = LONG_PLATFORM_SECONDS if "long" in words(source.url) else PLATFORM_SECONDS
        return round(rng.uniform(low, high), 1), source.aspect

    async def _create_analysis(self, caller: Caller, source: Source, at_capacity: bool, base_url: str) -> str:
        world = self.world
        seconds, aspect = await self._measure(source)
        if seconds > limits.SOURCE_VIDEO_MAX_SECONDS:
            raise bad_request(messages.video_too_long(seconds))
        credits = limits.ANALYSIS_CREDITS
        lifecycle.admit(world.accounts, caller, credits, lifecycle.top_up_url(base_url))
        analysis_id = world.new_id()
        if at_capacity:
            lifecycle.refuse_at_capacity(world.accounts, caller, credits, "analysis", analysis_id)
        world.accounts.charge(caller, credits, "analysis", analysis_id)
        outcome, runtime = lifecycle.plan(
            world.faults, ANALYSIS_BASE_SECONDS + ANALYSIS_PER_SECOND * seconds, seconds
        )
        now = world.clock.now()
        shots_only = (
            "shots" in words(source.url) or world.rng("shots", source.url).random() < SHOTS_ONLY_SHARE
        )
        analysis = Analysis(
            analysis_id, caller, source, seconds, aspect, base_url, now, now + runtime, outcome, shots_only
        )
        self.analyses[analysis_id] = analysis
        self.unsaved_analyses.add(analysis_id)
        world.schedule(runtime, lambda: self.settle(analysis))
        return analysis_id

    def settle(self, analysis: Analysis) -> None:
        """Finish the analysis, or the blueprint build, whose simulated time has come."""
        world = self.world
        now = world.clock.now()
        self.unsaved_analyses.add(analysis.id)
        if analysis.status == states.ANALYZING and now >= analysis.ready_at:
            if analysis.outcome == lifecycle.SUCCEED:
                self._ready(analysis)
            else:
                analysis.status = states.FAILED
                minutes = round((analysis.ready_at - analysis.created_at) / 60, 1)
                analysis.error = (
                    messages.analysis_timed_out(minutes)
                    if analysis.outcome == lifecycle.TIMEOUT
                    else messages.ANALYSIS_FAILED
                )
                world.accounts.refund(
                    analysis.caller, limits.ANALYSIS_CREDITS, "analysis", analysis.id, note=states.FAILED
                )
        if analysis.build_at is not None and now >= analysis.build_at and analysis.blueprint is not None:
            for clip, prompt in zip(analysis.blueprint["clips"], analysis.prompts, strict=True):
                clip["prompt"] = prompt
            analysis.build_at = None

    def _ready(self, analysis: Analysis) -> None:
        """Write the title, blueprint, stored copy and poster of a finished analysis."""
        world = self.world
        # Seeded by the link, like its length: the same video read twice gives the same blueprint.
        rng = world.rng("analysis", analysis.source.url)
        blueprint, prompts = build_blueprint(rng, analysis.seconds, analysis.aspect)
        if analysis.source.platform is None:
            name = unquote(urlsplit(analysis.source.url).path).rsplit("/", 1)[-1]
            analysis.title = name.rsplit(".", 1)[0] or "Untitled video"
        else:
            analysis.title = rng.choice(TITLES)
        if analysis.shots_only:
            for clip in blueprint["clips"]:
                clip["prompt"] = None
        analysis.blueprint, analysis.prompts = blueprint, prompts
        width, height = SIZES[analysis.aspect]
        seed = rng.randrange(2**31)
        if analysis.source.platform is None:
            analysis.video_url = analysis.source.url
        else:
            spec = MediaSpec("video", analysis.title, analysis.seconds, seed, width, height, "mp4", True)
            analysis.video_url = world.media_url(analysis.base_url, spec)
        poster = MediaSpec("image", analysis.title, 0, seed, width, height, "png")
        analysis.poster_url = world.media_url(analysis.base_url, poster)
        analysis.status = states.READY

    def analysis(self, caller: Caller, analysis_id: str) -> Analysis:
        """The caller's analysis, settled to now; 404 ``Flow not found`` otherwise."""
        analysis = lifecycle.owned(self.analyses, analysis_id, caller, messages.FLOW_NOT_FOUND)
        self.settle(analysis)
        return analysis

    def build(self, caller: Caller, analysis_id: str) -> dict[str, Any]:
        """``POST .../blueprint``: start writing the clip prompts of a shot-list-only analysis."""
        analysis = self.analysis(caller, analysis_id)
        names = self.world.wire
        reason = None
        if analysis.status == states.ANALYZING:
            reason = messages.BLUEPRINT_ANALYZING
        elif analysis.status == states.FAILED:
            reason = messages.BLUEPRINT_ANALYSIS_FAILED
        elif analysis.build_at is not None:
            reason = messages.BLUEPRINT_BUILDING
        elif not analysis.shot_list_only:
            reason = messages.BLUEPRINT_BUILT
        if reason is not None:
            answer: dict[str, Any] = {}
            wire.put(answer, names.blueprint_started, False)
            wire.put(answer, names.blueprint_reason, reason)
            return answer
        assert analysis.blueprint is not None  # a ready analysis has its shot list
        build_seconds = BLUEPRINT_BASE_SECONDS + BLUEPRINT_PER_CLIP * len(analysis.blueprint["clips"])
        analysis.build_at = self.world.clock.now() + build_seconds
        self.unsaved_analyses.add(analysis.id)
        self.world.schedule(build_seconds, lambda: self.settle(analysis))
        started: dict[str, Any] = {}
        wire.put(started, names.blueprint_started, True)
        return started

    # --- runs

    async def replicate(
        self,
        caller: Caller,
        analysis_id: str,
        body: Mapping[str, Any],
        *,
        idempotency_key: str | None,
        at_capacity: bool,
        base_url: str,
    ) -> tuple[Run, bool]:
        """``POST .../replicate``: body rules, the Idempotency-Key, then readiness, clips, cap, balance."""
        analysis = self.analysis(caller, analysis_id)
        request = run_request(body, self.world.catalog)
        if request.webhook is not None:
            await self.world.outbox.check(request.webhook)

        async def create() -> str:
            return await self._create_run(caller, analysis, request, at_capacity, base_url)

        run_id, created = await self.run_keys.once(caller.account.id, idempotency_key, create)
        return self.runs[run_id], created

    async def _create_run(
        self, caller: Caller, analysis: Analysis, request: RunRequest, at_capacity: bool, base_url: str
    ) -> str:
        world = self.world
        if analysis.status != states.READY or analysis.blueprint is None:
            raise bad_request(messages.FLOW_NOT_READY)
        if analysis.shot_list_only:
            raise bad_request(messages.STILL_READING_SHOTS)
        clips = analysis.blueprint["clips"]
        selected = sorted(set(request.clips)) if request.clips is not None else list(range(len(clips)))
        if not all(0 <= index < len(clips) for index in selected):
            raise bad_request(messages.CLIP_OUT_OF_RANGE)
        if request.audio is not None and request.audio["mode"] == "upload":
            await self._check_track(request.audio["url"])
        if request.character_image is not None:
            await self._see_character(request.character_image)
        groups = pack(clips, selected, request.accuracy, request.model.id in MULTI_SHOT_MODELS)
        takes = [self._take(request, g, clips[g[-1]]["end"] - clips[g[0]]["start"]) for g in groups]
        image = request.character_image

        def moderate() -> None:
            if image is not None and moderation.IMAGE_MARKER in image.lower():
                raise bad_request(messages.IMAGE_MODERATED)

        lifecycle.admit(world.accounts, caller, takes[0].credits, lifecycle.top_up_url(base_url), moderate)
        run_id = world.new_id()
        if at_capacity:
            lifecycle.refuse_at_capacity(
                world.accounts, caller, takes[0].credits, "replication", run_id, modelId=request.model.id
            )
        self._schedule_takes(run_id, request.model, takes)
        run = Run(
            id=run_id,
            analysis=analysis,
            caller=caller,
            model=request.model,
            quality=request.quality,
            accuracy=request.accuracy,
            takes=takes,
            captions=request.captions,
            audio=request.audio,
            marketing_aspect=request.marketing_aspect,
            webhook=request.webhook,
            base_url=base_url,
            created_at=takes[0].start_at,
        )
        self.runs[run_id] = run
        self.advance(run)
        self._schedule_advance(run)
        return run_id

    def _advancer(self, run: Run) -> Callable[[], None]:
        """A timer callback that advances ``run``."""
        return lambda: self.advance(run)

    async def _check_track(self, url: str) -> None:
        """An uploaded soundtrack must be an .mp3, .wav or .mp4 the service can download."""
        if schema.url_extension(url) not in limits.LENGTH_BILLED_EXTENSIONS:
            raise bad_request(messages.UNSUPPORTED_MEDIA_FORMAT)
        try:
            await fetch.download(url, self.world.own_file)
        except fetch.Unreachable:
            raise bad_request(messages.media_not_reachable("audio")) from None

    async def _see_character(self, url: str) -> None:
        """The character image as the models see it: an SVG drawn as PNG (the spec's rule for image
        links); one that cannot be drawn is refused before any charge. One the sandbox cannot download
        counts as seen (it runs offline; the spec checks only moderation here)."""
        try:
            await fetch.image(url, self.world.own_file)
        except fetch.Unreachable:
            pass
        except NotDrawable as exc:
            raise bad_request(messages.image_unreadable("characterImage", exc.looks_like)) from None

    @staticmethod
    def _take(request: RunRequest, clips: list[int], seconds: float) -> Take:
        """A take's input and price, not yet placed in time."""
        values = take_input(request.model, request.quality, seconds)
        return Take(tuple(clips), round(seconds, 2), pricing.price(request.model, values, None), values)

    def _schedule_takes(self, run_id: str, model: catalog.ModelSpec, takes: list[Take]) -> None:
        """Draw every take's model outcome and place the takes one after another from now."""
        rng = self.world.rng("run", run_id)

        def plan_take(take: Take) -> float:
            runtime = catalog.simulated_runtime(model, take.input, None) * rng.lognormvariate(0, 0.2)
            take.outcome, runtime = lifecycle.plan(self.world.faults, runtime, take.seconds)
            return runtime

        lifecycle.lay_out(takes, self.world.clock.now(), plan_take)

    def advance(self, run: Run) -> None:
        """Apply every event of the run whose simulated time has come, in order."""
        now = self.world.clock.now()
        self.unsaved_runs.add(run.id)
        if lifecycle.advance_steps(
            run.takes,
            now,
            lambda: run.status == states.GENERATING,
            lambda take: self._charge(run, take),
            lambda take: self._settle_take(run, take),
        ):
            run.status = states.STITCHING
        if run.status == states.STITCHING and now >= run.done_at:
            self._finish(run)
        marketing_due = now >= run.done_at + MARKETING_DELAY_SECONDS
        if run.status == states.DONE and run.marketing_video_url is None and marketing_due:
            self._marketing(run)

    def _charge(self, run: Run, take: Take) -> bool:
        """Charge a take as it starts; fail the run when the cap or the balance cannot cover it."""
        remaining = sum(t.credits for t in run.takes if not t.charged)
        top_up = lifecycle.top_up_url(run.base_url)
        refusal = lifecycle.charge_step(
            self.world.accounts,
            run.caller,
            take.credits,
            "replication",
            run.id,
            lambda balance: messages.not_enough_credits(remaining, balance, top_up),
            **run.ledger_note(take),
        )
        if refusal is not None:
            self._fail(run, refusal)
            return False
        take.charged = True
        return True

    def _settle_take(self, run: Run, take: Take) -> None:
        """Count a finished take's clips, or refund it and fail the run."""
        if take.outcome == lifecycle.SUCCEED:
            run.done_clips += len(take.clips)
            return
        note = run.ledger_note(take)
        self.world.accounts.refund(
            run.caller, take.credits, "replication", run.id, **note, note=states.FAILED
        )
        reason = (
            lifecycle.timed_out(take.start_at, take.end_at)
            if take.outcome == lifecycle.TIMEOUT
            else messages.clip_model_failed(run.model.name)
        )
        self._fail(run, messages.clip_failed(", ".join(map(str, take.clips)), reason))

    def _fail(self, run: Run, error: str) -> None:
        """End the run as failed and send its webhook."""
        run.status, run.error = states.FAILED, error
        self._notify(run)

    def _video(self, run: Run, prompt: str, offset: int, size: tuple[int, int], audio: bool) -> str:
        """The URL of one of the run's videos, as long as the replica."""
        seed = self.world.rng("run media", run.id).randrange(2**31)
        spec = MediaSpec("video", prompt, run.seconds, seed + offset, *size, "mp4", audio)
        return self.world.media_url(run.base_url, spec)

    def _finish(self, run: Run) -> None:
        """Write the replica, side-by-side, clean copy and share link; the run is done; send its webhook."""
        width, height = SIZES[run.analysis.aspect]
        sound = run.audio is not None
        title = run.analysis.title or "video"
        run.output_video_url = self._video(run, f"Replica: {title}", 0, (width, height), sound)
        run.compare_video_url = self._video(run, f"Original | replica: {title}", 1, (width * 2, height), True)
        if run.captions:
            run.clean_output_video_url = self._video(
                run, f"Replica without text: {title}", 2, (width, height), sound
            )
        run.share_url = run.base_url + path("sandbox_app", page=f"r/{run.id}")
        run.status = states.DONE
        self._notify(run)

    def _marketing(self, run: Run) -> None:
        """The branded marketing cuts, which arrive a few seconds after ``done``."""
        prompt = f"Made with replication: {run.analysis.title or 'video'}"
        run.marketing_video_url = self._video(run, prompt, 3, SIZES[run.marketing_aspect], True)
        run.marketing_video_url_169 = self._video(run, prompt, 3, SIZES["16:9"], True)

    def _notify(self, run: Run) -> None:
        """The run's webhook: its resource fields plus ``event: replication.completed``."""
        if run.webhook:
            payload = {**run.public(self.world), "event": states.REPLICATION_COMPLETED}
            self.world.outbox.send(run.webhook, payload)

    def run(self, caller: Caller, run_id: str) -> Run:
        """``GET /v1/runs/{id}``: the caller's run, advanced to now; 404 ``Run not found`` otherwise."""
        found = lifecycle.owned(self.runs, run_id, caller, messages.RUN_NOT_FOUND)
        self.advance(found)
        return found
