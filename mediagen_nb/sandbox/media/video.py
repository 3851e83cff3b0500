"""Drawing videos: a panning seeded canvas that cuts every few seconds, with the prompt, a ball, a clock."""

import math
from collections.abc import Iterator

from PIL import Image, ImageDraw

from mediagen_nb.sandbox.media.encoding import mp4_bytes
from mediagen_nb.sandbox.media.images import canvas, caption, typeface
from mediagen_nb.sandbox.media.spec import seeded
from mediagen_nb.sandbox.media.speech import speech_samples

VIDEO_LONG_SIDE = 320  # videos are scaled down to this long side so renders stay fast


def _video_geometry(width: int, height: int, seconds: float) -> tuple[int, int, int]:
    """Return the encoded (width, height, fps): long side capped, sides even, fewer frames for long videos."""
    scale = min(1.0, VIDEO_LONG_SIDE / max(width, height))
    w, h = (max(16, round(side * scale)) for side in (width, height))
    fps = 12 if seconds <= 20 else 8 if seconds <= 60 else 4  # >= 4 fps keeps the length within 1/8 s
    return w + w % 2, h + h % 2, fps


def _video_frames(
    prompt: str, seed: int, width: int, height: int, fps: int, seconds: float
) -> Iterator[Image.Image]:
    """Yield frames: a panning canvas that changes every few seconds ("shots"), prompt, ball, clock."""
    rng = seeded("video", seed, prompt)
    shot_seconds = rng.uniform(3.0, 6.0)
    pan_x, pan_y = rng.uniform(5.0, 9.0), rng.uniform(6.0, 11.0)
    ball_vx, ball_vy = rng.uniform(0.2, 0.45), rng.uniform(0.25, 0.5)
    bw, bh = width + width // 2, height + height // 2
    overlay = Image.new("RGBA", (width, height))
    caption(ImageDraw.Draw(overlay), overlay.size, prompt, max(8, min(width, height) // 14))
    clock_font = typeface(max(8, min(width, height) // 14))
    radius = max(3, min(width, height) // 12)
    shot = 0
    background = canvas(prompt, seed, bw, bh, variant=1)
    for i in range(max(1, round(seconds * fps))):
        t = i / fps
        if int(t // shot_seconds) != shot:
            shot = int(t // shot_seconds)
            background = canvas(prompt, seed, bw, bh, variant=shot + 1)
        x = round((bw - width) * 0.5 * (1 + math.sin(2 * math.pi * t / pan_x + shot)))
        y = round((bh - height) * 0.5 * (1 + math.cos(2 * math.pi * t / pan_y + shot)))
        frame = background.crop((x, y, x + width, y + height))
        frame.paste(overlay, (0, 0), overlay)
        draw = ImageDraw.Draw(frame)
        bx = radius + (width - 2 * radius) * abs((t * ball_vx) % 2 - 1)  # bounce between the edges
        by = radius + (height - 2 * radius) * abs((t * ball_vy) % 2 - 1)
        draw.ellipse(
            (bx - radius, by - radius, bx + radius, by + radius), fill=(255, 240, 120), outline=(0, 0, 0)
        )
        draw.text(
            (3, 2),
            f"{t:.1f}s  #{shot + 1}",
            font=clock_font,
            fill="white",
            stroke_width=1,
            stroke_fill="black",
        )
        yield frame


def render_video(
    prompt: str, *, seconds: float, seed: int, width: int, height: int, audio: bool = False
) -> bytes:
    """Render a small H.264 MP4 of a moving seeded composition with `prompt` on it, optionally with speech.

    Frames are scaled to at most 320 px on the long side (even sides) at 12/8/4 fps by length, for speed.
    """
    w, h, fps = _video_geometry(width, height, seconds)
    samples = speech_samples(seconds, seed, prompt) if audio else None
    return mp4_bytes(_video_frames(prompt, seed, w, h, fps, seconds), w, h, fps, samples)
