"""Replication's resources: an analysis of a short, its blueprint, and a replication run."""

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from html import escape
from typing import Any

from mediagen_nb.client import html
from mediagen_nb.client.resources.fields import (
    ANALYSIS_FIELDS,
    BLUEPRINT_FIELDS,
    OBJECT,
    RUN_FIELDS,
    Shown,
    blueprint_build_fields,
    expect,
    parse,
    short,
)
from mediagen_nb.protocol import wire

MARKETING_COMING = "marketing cuts still coming: they arrive after done; read the run again for them"


def in_words(value: Any) -> str | None:
    """A blueprint member whose type the spec does not show, as a reader wants it: ``{"framing":
    "close-up", "movement": "slow push-in"}`` is ``close-up, slow push-in``; a text stays as it is."""
    if value is None or isinstance(value, str):
        return value
    parts = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else [value]
    return ", ".join(str(part) for part in parts if part not in (None, ""))


@dataclass(frozen=True, repr=False)
class Blueprint(Shown):
    """A shot-by-shot plan of a short video. Clip members' types are not shown by the spec: kept as dicts."""

    clips: tuple[Mapping[str, Any], ...] = ()
    style_bible: Any = None
    soundtrack: Any = None
    aspect: Any = None
    shots: Any = None
    speakers: Any = None
    characters: Any = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _headline = ("aspect", "clips")

    def __repr__(self) -> str:
        return f"Blueprint(clips={len(self.clips)}, aspect={self.aspect!r}, prompts={self.has_prompts})"

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> "Blueprint":
        blueprint = parse(cls, data, BLUEPRINT_FIELDS)
        for clip in blueprint.clips or ():
            expect("Blueprint", "clips[]", clip, OBJECT)
        return replace(blueprint, clips=tuple(blueprint.clips or ()))

    @property
    def has_prompts(self) -> bool:
        """False while only the shot list exists (every clip's ``prompt`` is null)."""
        return bool(self.clips) and all(clip.get("prompt") for clip in self.clips)

    def rows(self) -> list[dict[str, Any]]:
        """One plain row per clip (index, start, end, camera in words, prompt), for a table or a DataFrame."""
        return [
            {
                "clip": i,
                "start": clip.get("start"),
                "end": clip.get("end"),
                "camera": in_words(clip.get("camera")),
                "prompt": clip.get("prompt"),
            }
            for i, clip in enumerate(self.clips)
        ]

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{r['clip']}</td><td>{escape(str(r['start']))} to {escape(str(r['end']))} s</td>"
            f"<td>{escape(short(r['camera'] or '', 50))}</td>"
            f"<td>{escape(str(r['prompt'] or '(shot list only)'))}</td></tr>"
            for r in self.rows()
        )
        head = "<tr><th>#</th><th>time</th><th>camera</th><th>prompt</th></tr>"
        table = f'<table style="font-size:12px">{head}{rows}</table>'
        return html.card("Blueprint", f"{len(self.clips)} clips", [("aspect", self.aspect)], table)


@dataclass(frozen=True, repr=False)
class Analysis(Shown):
    """A replication analysis: the source video read into a blueprint (``analyzing`` → ``ready``)."""

    id: str
    status: str | None = None
    title: str | None = None
    duration_seconds: float | None = None
    clip_count: int | None = None
    source_url: str | None = None
    video_url: str | None = None
    poster_url: str | None = None
    blueprint: Blueprint | None = None
    error: str | None = None
    credits_spent: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    reused: bool = False  # an earlier start of the same ask, returned at no charge

    _headline = ("id", "status", "title", "duration_seconds", "clip_count", "error", "reused")

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> "Analysis":
        analysis = parse(cls, data, ANALYSIS_FIELDS)
        raw = data.get("blueprint")
        return replace(analysis, blueprint=Blueprint.from_api(raw) if isinstance(raw, Mapping) else None)

    @property
    def done(self) -> bool:
        return self.status in ("ready", "failed")

    def _repr_html_(self) -> str:
        facts = [("clips", self.clip_count), ("length", self.duration_seconds), ("id", self.id)]
        body = html.media(self.poster_url, "image", width=180) + html.error_line(self.error)
        if self.blueprint is not None:  # the table is the blueprint's own card, shown once where asked for
            clips = len(self.blueprint.clips)
            body += f"<div>blueprint: {clips} clips (<code>.blueprint</code> shows them)</div>"
        return html.card(self.title or "Analysis", self.status, facts, body)


@dataclass(frozen=True, repr=False)
class BlueprintBuild(Shown):
    """The answer of ``POST .../blueprint``: whether a build started, and why not."""

    started: bool
    reason: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _headline = ("started", "reason")

    @classmethod
    def from_api(cls, data: Mapping[str, Any], names: wire.Names = wire.DEFAULT) -> "BlueprintBuild":
        return parse(cls, data, blueprint_build_fields(names), required=("started",))


@dataclass(frozen=True, repr=False)
class ReplicationRun(Shown):
    """A replica being rendered clip by clip (``generating`` → ``stitching`` → ``done``/``failed``)."""

    id: str
    analysis_id: str | None = None
    model_id: str | None = None
    quality: str | None = None
    status: str | None = None
    total_clips: int | None = None
    done_clips: int | None = None
    output_video_url: str | None = None
    compare_video_url: str | None = None
    clean_output_video_url: str | None = None
    marketing_video_url: str | None = None
    marketing_video_url_169: str | None = None
    share_url: str | None = None
    error: str | None = None
    created_at: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    reused: bool = False  # an earlier start of the same ask, returned at no charge

    _headline = (
        "id",
        "model_id",
        "status",
        "done_clips",
        "total_clips",
        "output_video_url",
        "error",
        "reused",
    )

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> "ReplicationRun":
        if isinstance(data, Mapping) and "runId" in data and "id" not in data:
            data = {"id": data["runId"], **{k: v for k, v in data.items() if k != "runId"}}
        return parse(cls, data, RUN_FIELDS)

    @property
    def done(self) -> bool:
        return self.status in ("done", "failed")

    @property
    def marketing_coming(self) -> bool:
        """Done, but its marketing cuts have not arrived yet (the spec: they come slightly after ``done``)."""
        return self.status == "done" and None in (self.marketing_video_url, self.marketing_video_url_169)

    def __repr__(self) -> str:
        shown = super().__repr__()
        return shown[:-1] + ", marketing cuts still coming)" if self.marketing_coming else shown

    def _repr_html_(self) -> str:
        facts = [
            ("model", self.model_id),
            ("quality", self.quality),
            ("clips", f"{self.done_clips}/{self.total_clips}"),
        ]
        body = html.error_line(self.error)
        for label, url in (("compare", self.compare_video_url), ("replica", self.output_video_url)):
            if url:
                body += f"<div>{escape(label)}<br>{html.media(url, 'video')}</div>"
        if self.marketing_coming:
            body += f"<div>{escape(MARKETING_COMING)}</div>"
        if self.share_url:
            body += f"<div>share: {html.link(self.share_url)}</div>"
        return html.card("Replication run", self.status, facts, body)
