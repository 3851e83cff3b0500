"""What a finished generation makes: the media files of its output, sized from its input, and the
image inputs as its model sees them (an SVG drawn as PNG).

Images keep the input's ``aspect_ratio`` (or ``width``/``height``, at most 768 px a side); videos are
320 px on the long side, and a lip-sync video keeps the aspect ratio of its face image.
"""

import asyncio
import io
import math
from collections.abc import Mapping
from typing import Any

from PIL import Image

from mediagen_nb.protocol.schema import media_kind
from mediagen_nb.sandbox import catalog
from mediagen_nb.sandbox.fetch import OwnFiles, Unreachable, image
from mediagen_nb.sandbox.media import MediaSpec
from mediagen_nb.sandbox.media.vector import NotDrawable

MAX_SIDE = 768  # images are drawn at most this large; the real service's sizes do not matter here
LIP_SYNC_GROUP = "Lip-sync"


def _ratio(values: Mapping[str, Any]) -> tuple[float, float] | None:
    ratio = values.get("aspect_ratio")
    if isinstance(ratio, str) and ":" in ratio:
        w, _, h = ratio.partition(":")
        try:
            width, height = float(w), float(h)
        except ValueError:
            return None
        return (width, height) if 0 < width < math.inf and 0 < height < math.inf else None
    return None


def image_size(values: Mapping[str, Any]) -> tuple[int, int]:
    """An image's size: its ``width``/``height`` scaled to fit, else 512 px on the long side."""
    width, height = values.get("width"), values.get("height")
    if isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0:
        scale = min(1.0, MAX_SIDE / max(width, height))
        return max(16, int(width * scale)), max(16, int(height * scale))
    ratio = _ratio(values) or (1.0, 1.0)
    scale = 512 / max(ratio)
    return int(ratio[0] * scale), int(ratio[1] * scale)


def video_size(values: Mapping[str, Any], frame: tuple[int, int] | None = None) -> tuple[int, int]:
    """A video's size: the face frame's aspect, else the ``aspect_ratio``, else 16:9; even sides."""
    ratio = frame or _ratio(values) or (16.0, 9.0)
    scale = 320 / max(ratio)
    return max(16, int(ratio[0] * scale) // 2 * 2), max(16, int(ratio[1] * scale) // 2 * 2)


async def seen_images(
    model: catalog.ModelSpec, values: Mapping[str, Any], own_files: OwnFiles
) -> tuple[dict[str, bytes], str | None]:
    """Every image input (lists too) as the model sees it, by name (``input_images[1]``): downloaded, an
    SVG drawn as PNG (the spec's rule, ``fetch.image``); and why one cannot be seen (an SVG that cannot
    be drawn), else None. One the sandbox cannot download counts as seen: it runs offline, and the spec
    checks image links at no step of a start."""
    links: list[tuple[str, str]] = []
    for name, prop in model.input_schema.get("properties", {}).items():
        value = values.get(name)
        if media_kind(prop) != "image" or value is None:
            continue
        if isinstance(value, list):
            links += [(f"{name}[{i}]", url) for i, url in enumerate(value) if isinstance(url, str)]
        elif isinstance(value, str):
            links.append((name, value))

    async def see(url: str) -> bytes | str | None:
        try:
            return await image(url, own_files)
        except Unreachable:
            return None
        except NotDrawable as exc:
            return exc.looks_like

    seen, unseen = {}, None
    for (name, _), got in zip(links, await asyncio.gather(*(see(url) for _, url in links)), strict=True):
        if isinstance(got, bytes):
            seen[name] = got
        elif isinstance(got, str) and unseen is None:
            unseen = f"{name}, {got}"
    return seen, unseen


def face_frame(model: catalog.ModelSpec, seen: Mapping[str, bytes]) -> tuple[int, int] | None:
    """The size of a lip-sync run's face ``image`` as seen (the output keeps its aspect ratio); None
    if there is none or it is not an image."""
    if model.group != LIP_SYNC_GROUP or "image" not in seen:
        return None
    try:
        with Image.open(io.BytesIO(seen["image"])) as face:
            width, height = face.size
    except Exception:  # not an image: the spec checks none at start; keep the default
        return None
    return (width, height) if width > 0 and height > 0 else None


def output_specs(
    model: catalog.ModelSpec,
    values: Mapping[str, Any],
    media_seconds: float | None,
    frame: tuple[int, int] | None,
    seed: int,
) -> list[MediaSpec]:
    """The files of a successful run, in order (the first is the main result)."""
    prompt = str(values.get("prompt") or values.get("text") or model.name)
    if model.kind == "image":
        width, height = image_size(values)
        count = values.get("num_images", 1)
        count = count if isinstance(count, int) and 1 <= count <= 4 else 1
        return [MediaSpec("image", prompt, 0, seed + i, width, height, "png") for i in range(count)]
    seconds = catalog.output_seconds(model, values, media_seconds) or 5.0
    if model.kind == "audio":
        fmt = "mp3" if model.group == "Music" else "wav"
        return [MediaSpec("audio", prompt, seconds, seed, fmt=fmt)]
    width, height = video_size(values, frame)
    audio = bool(model.media_field) or bool(values.get("generate_audio"))
    return [MediaSpec("video", prompt, seconds, seed, width, height, "mp4", audio)]
