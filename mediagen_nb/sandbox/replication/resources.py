"""The replication resources: an analysis, a run, and the validated body of a replicate start."""

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from mediagen_nb.protocol import limits, states
from mediagen_nb.protocol import replication as rules
from mediagen_nb.protocol.schema import InputError
from mediagen_nb.sandbox import catalog, lifecycle
from mediagen_nb.sandbox.accounts import Caller
from mediagen_nb.sandbox.replication.links import Source
from mediagen_nb.sandbox.replication.takes import Take
from mediagen_nb.sandbox.responses import bad_request

if TYPE_CHECKING:
    from mediagen_nb.sandbox.world import World

STITCH_BASE_SECONDS, STITCH_PER_SECOND = 10.0, 0.25


@dataclass
class Analysis:
    """One analysis: its source, its planned outcome and what it has produced so far."""

    id: str
    caller: Caller
    source: Source
    seconds: float
    aspect: str
    base_url: str
    created_at: float
    ready_at: float
    outcome: lifecycle.Outcome
    shots_only: bool
    status: str = states.ANALYZING
    title: str | None = None
    video_url: str | None = None
    poster_url: str | None = None
    blueprint: dict[str, Any] | None = None
    prompts: list[str] = field(default_factory=list)  # written into the clips once the blueprint is built
    build_at: float | None = None  # when a POST .../blueprint build finishes
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The analysis as saved state (``state.py``)."""
        return {
            "id": self.id,
            "caller": self.caller.to_dict(),
            "source": asdict(self.source),
            "seconds": self.seconds,
            "aspect": self.aspect,
            "baseUrl": self.base_url,
            "createdAt": self.created_at,
            "readyAt": self.ready_at,
            "outcome": self.outcome,
            "shotsOnly": self.shots_only,
            "status": self.status,
            "title": self.title,
            "videoUrl": self.video_url,
            "posterUrl": self.poster_url,
            "blueprint": self.blueprint,
            "prompts": self.prompts,
            "buildAt": self.build_at,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], caller: Caller) -> "Analysis":
        return cls(
            data["id"],
            caller,
            Source(**data["source"]),
            data["seconds"],
            data["aspect"],
            data["baseUrl"],
            data["createdAt"],
            data["readyAt"],
            data["outcome"],
            data["shotsOnly"],
            data["status"],
            data["title"],
            data["videoUrl"],
            data["posterUrl"],
            data["blueprint"],
            data["prompts"],
            data["buildAt"],
            data["error"],
        )

    @property
    def shot_list_only(self) -> bool:
        """Ready with clip prompts still null (the blueprint is not written yet)."""
        return self.blueprint is not None and any(clip["prompt"] is None for clip in self.blueprint["clips"])

    def started(self) -> dict[str, Any]:
        """The analyze answer, also for a replayed Idempotency-Key."""
        return {"analysisId": self.id, "status": self.status, "creditsSpent": limits.ANALYSIS_CREDITS}

    def public(self) -> dict[str, Any]:
        """The Analysis resource of the spec's table."""
        ready = self.status == states.READY
        return {
            "analysisId": self.id,
            "status": self.status,
            "title": self.title,
            "durationSeconds": round(self.seconds, 2) if ready else None,
            "clipCount": len(self.blueprint["clips"]) if self.blueprint else None,
            "sourceUrl": self.source.url,
            "videoUrl": self.video_url,
            "posterUrl": self.poster_url,
            "blueprint": self.blueprint,
            "error": self.error,
        }


@dataclass(frozen=True)
class RunRequest:
    """A validated replicate body."""

    model: catalog.ModelSpec
    quality: str
    accuracy: str
    clips: list[int] | None
    character_image: str | None
    captions: bool
    audio: dict[str, Any] | None
    marketing_aspect: str
    webhook: str | None


def run_request(body: Mapping[str, Any], models: catalog.Catalog) -> RunRequest:
    """The replicate body checked by the spec's rules (``protocol.replication``, the client's own),
    with defaults (the webhook's host is checked by the backend)."""
    try:
        rules.check_run_body(body)
    except InputError as exc:
        raise bad_request(exc.message) from None

    def given(name: str) -> str:  # a field absent or null takes the service's default
        value = body.get(name)
        return str(value) if value is not None else rules.DEFAULTS[name]

    audio = body.get("audio")
    return RunRequest(
        models.spec(given("modelId")),
        given("quality"),
        given("accuracy"),
        body.get("clips"),
        body.get("characterImage"),
        bool(body.get("captions") or False),
        dict(audio) if isinstance(audio, Mapping) else None,
        given("marketingAspect"),
        body.get("webhook"),
    )


@dataclass
class Run:
    """One replication run: its takes in time order and the outputs produced so far."""

    id: str
    analysis: Analysis
    caller: Caller
    model: catalog.ModelSpec
    quality: str
    accuracy: str
    takes: list[Take]
    captions: bool
    audio: dict[str, Any] | None
    marketing_aspect: str
    webhook: str | None
    base_url: str
    created_at: float
    status: str = states.GENERATING
    done_clips: int = 0
    output_video_url: str | None = None
    compare_video_url: str | None = None
    clean_output_video_url: str | None = None
    marketing_video_url: str | None = None
    marketing_video_url_169: str | None = None
    share_url: str | None = None
    error: str | None = None

    @property
    def seconds(self) -> float:
        """Length of the replica: the selected clips' total."""
        return sum(take.seconds for take in self.takes)

    @property
    def done_at(self) -> float:
        """Simulated time the run is done, if no take fails (after stitching)."""
        return self.takes[-1].end_at + STITCH_BASE_SECONDS + STITCH_PER_SECOND * self.seconds

    def to_dict(self) -> dict[str, Any]:
        """The run as saved state (``state.py``); its analysis by id."""
        return {
            "id": self.id,
            "analysisId": self.analysis.id,
            "caller": self.caller.to_dict(),
            "modelId": self.model.id,
            "quality": self.quality,
            "accuracy": self.accuracy,
            "takes": [asdict(take) for take in self.takes],
            "captions": self.captions,
            "audio": self.audio,
            "marketingAspect": self.marketing_aspect,
            "webhook": self.webhook,
            "baseUrl": self.base_url,
            "createdAt": self.created_at,
            "status": self.status,
            "doneClips": self.done_clips,
            "outputVideoUrl": self.output_video_url,
            "compareVideoUrl": self.compare_video_url,
            "cleanOutputVideoUrl": self.clean_output_video_url,
            "marketingVideoUrl": self.marketing_video_url,
            "marketingVideoUrl169": self.marketing_video_url_169,
            "shareUrl": self.share_url,
            "error": self.error,
        }

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], analysis: Analysis, caller: Caller, models: catalog.Catalog
    ) -> "Run":
        return cls(
            id=data["id"],
            analysis=analysis,
            caller=caller,
            model=models.spec(data["modelId"]),
            quality=data["quality"],
            accuracy=data["accuracy"],
            takes=[Take(**{**take, "clips": tuple(take["clips"])}) for take in data["takes"]],
            captions=data["captions"],
            audio=data["audio"],
            marketing_aspect=data["marketingAspect"],
            webhook=data["webhook"],
            base_url=data["baseUrl"],
            created_at=data["createdAt"],
            status=data["status"],
            done_clips=data["doneClips"],
            output_video_url=data["outputVideoUrl"],
            compare_video_url=data["compareVideoUrl"],
            clean_output_video_url=data["cleanOutputVideoUrl"],
            marketing_video_url=data["marketingVideoUrl"],
            marketing_video_url_169=data["marketingVideoUrl169"],
            share_url=data["shareUrl"],
            error=data["error"],
        )

    def ledger_note(self, take: Take) -> dict[str, Any]:
        """Ledger extras of a take's charge or refund: the model and the clips it renders."""
        return {"modelId": self.model.id, "clips": list(take.clips)}

    def public(self, world: "World") -> dict[str, Any]:
        """The Replication run resource of the spec's table (also the webhook body, plus ``event``)."""
        return {
            "id": self.id,
            "analysisId": self.analysis.id,
            "modelId": self.model.id,
            "quality": self.quality,
            "status": self.status,
            "totalClips": sum(len(take.clips) for take in self.takes),
            "doneClips": self.done_clips,
            "outputVideoUrl": self.output_video_url,
            "compareVideoUrl": self.compare_video_url,
            "cleanOutputVideoUrl": self.clean_output_video_url,
            "marketingVideoUrl": self.marketing_video_url,
            "marketingVideoUrl169": self.marketing_video_url_169,
            "shareUrl": self.share_url,
            "error": self.error,
            "createdAt": world.clock.iso(self.created_at),
        }
