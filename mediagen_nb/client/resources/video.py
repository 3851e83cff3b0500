"""Topic-to-video's resources: a short-video job and the options it may be made with."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mediagen_nb.client import html
from mediagen_nb.client.resources.fields import Shown, job_fields, options_fields, parse, short
from mediagen_nb.protocol import wire


@dataclass(frozen=True, repr=False)
class ShortVideoJob(Shown):
    """A topic-to-video job (``scripting`` → ``portrait`` → ``animating`` → ``captioning`` → ``done``)."""

    id: str
    status: str | None = None
    stage: str | None = None
    progress: float | None = None
    script: str | None = None
    portrait_url: str | None = None
    lipsync_video_url: str | None = None
    video_url: str | None = None
    credits_used: int | None = None
    edit_report: Mapping[str, Any] | None = None
    degraded: bool | None = None
    flow: str | None = None
    topic: str | None = None
    voice: str | None = None
    seconds: float | None = None
    poster_url: str | None = None
    error: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    reused: bool = False  # an earlier start of the same ask, returned at no charge

    _headline = ("id", "status", "progress", "credits_used", "video_url", "error", "reused")

    @classmethod
    def from_api(cls, data: Mapping[str, Any], names: wire.Names = wire.DEFAULT) -> "ShortVideoJob":
        return parse(cls, data, job_fields(names))

    @property
    def done(self) -> bool:
        return self.status in ("done", "failed")

    def _repr_html_(self) -> str:
        progress = f"{self.progress:.0%}" if isinstance(self.progress, (int, float)) else None
        facts = [
            ("stage", self.stage),
            ("progress", progress),
            ("credits", self.credits_used),
            ("id", self.id),
        ]
        body = html.error_line(self.error)
        if self.video_url:
            body += html.media(self.video_url, "video")
        elif self.portrait_url:
            body += html.media(self.portrait_url, "image", width=160)
        if self.degraded:
            body += (
                '<div style="color:#9a6700">some edit steps were skipped: a plainer video than asked</div>'
            )
        return html.card(short(self.topic or "Short video", 60), self.status, facts, body)


@dataclass(frozen=True, repr=False)
class VideoOptions(Shown):
    """Topic-to-video choices: voices by gender, looks, edit styles (flows), length bounds, defaults."""

    voices: Mapping[str, Any] | None = None
    genders: Any = None
    looks: Any = None
    flows: Any = None
    seconds: Any = None
    defaults: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _headline = ("voices", "looks", "flows", "seconds")

    @classmethod
    def from_api(cls, data: Mapping[str, Any], names: wire.Names = wire.DEFAULT) -> "VideoOptions":
        """The options answer in spelling ``names``; one without its voices (the choice the spec names)
        is a ServiceResponseError naming the field and the setting, never an empty set of options."""
        return parse(cls, data, options_fields(names), required=("voices",))
