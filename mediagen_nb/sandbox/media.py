"""Real media files for the sandbox: drawn images, speech-like audio and small H.264 videos.

Every output is a pure function of its ``MediaSpec``, so a name hashed from the spec always maps to the
same bytes; ``MediaStore`` renders a name on first read, in a worker thread, and caches the result in
memory (LRU) and optionally on disk, so a sweep over hundreds of outputs only pays for what is fetched.
"""

from __future__ import annotations

import asyncio
import colorsys
import functools
import hashlib
import io
import json
import math
import os
import random
import re
import sys
import tempfile
import threading
import wave
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import av
from mutagen.mp3 import MP3
from mutagen.mp4 import MP4
from mutagen.wave import WAVE
from PIL import Image, ImageDraw, ImageFilter, ImageFont

SAMPLE_RATE = 16_000  # synthesized PCM: 16 kHz mono 16-bit
ENCODED_RATE = 48_000  # MP3/AAC rate: short codec frames keep the measured length within ~0.05 s
MAX_SIDE = 4096  # largest image or video side a spec may ask for
VIDEO_LONG_SIDE = 320  # videos are scaled down to this long side so renders stay fast

CONTENT_TYPES: dict[str, str] = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "mp4": "video/mp4",
}

_FORMATS: dict[str, tuple[str, ...]] = {"image": ("png", "jpg"), "audio": ("wav", "mp3"), "video": ("mp4",)}


@dataclass(frozen=True)
class MediaSpec:
    """Everything that determines one rendered file; equal specs render identical bytes."""

    kind: str  # "image" | "audio" | "video"
    prompt: str = ""  # drawn on images/video frames; for audio, the text being "spoken" (shapes the synth)
    seconds: float = 0.0  # audio/video length
    seed: int = 0
    width: int = 512  # image/video
    height: int = 512
    fmt: str = "png"  # "png" | "jpg" (images), "wav" | "mp3" (audio), "mp4" (video)
    audio: bool = False  # video: include an AAC audio track

    def __post_init__(self) -> None:
        """Validate the spec; the default fmt "png" on audio/video becomes that kind's default (wav, mp4)."""
        formats = _FORMATS.get(self.kind)
        if formats is None:
            raise ValueError(f"unknown media kind {self.kind!r}")
        if self.fmt == "png" and "png" not in formats:
            object.__setattr__(self, "fmt", formats[0])
        if self.fmt not in formats:
            raise ValueError(f"{self.kind} cannot be rendered as {self.fmt!r}; use one of {formats}")
        if self.kind != "image" and not (self.seconds > 0 and math.isfinite(self.seconds)):
            raise ValueError(f"{self.kind} needs a positive length, got seconds={self.seconds!r}")
        if not (0 < self.width <= MAX_SIDE and 0 < self.height <= MAX_SIDE):
            raise ValueError(f"size {self.width}x{self.height} outside 1..{MAX_SIDE}")
        object.__setattr__(self, "seconds", float(self.seconds))  # 5 and 5.0 hash to the same name


# ---------------------------------------------------------------------------------------------- images


def _rng(*parts: object) -> random.Random:
    """Return a generator seeded from a stable hash of `parts`, identical across processes."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _color(hue: float, saturation: float, value: float) -> tuple[int, int, int]:
    """Convert an HSV triple (hue wraps around) to an 8-bit RGB tuple."""
    r, g, b = colorsys.hsv_to_rgb(hue % 1.0, saturation, value)
    return round(r * 255), round(g * 255), round(b * 255)


@functools.lru_cache(maxsize=64)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Return Pillow's bundled font at `size` pixels (cached: loading it is the slow part of drawing text)."""
    return ImageFont.load_default(size=size)


def _canvas(prompt: str, seed: int, width: int, height: int, variant: int = 0) -> Image.Image:
    """Draw the seeded gradient-and-shapes composition that images, frames and previews start from."""
    rng = _rng("canvas", seed, prompt, variant)
    hue = rng.random()
    top = _color(hue, 0.55, 0.95)
    bottom = _color(hue + rng.uniform(0.25, 0.6), 0.65, 0.4)
    # Rotating the 256x256 ramp with expand=True leaves its centre square fully covered at any angle.
    ramp = Image.linear_gradient("L").rotate(rng.uniform(0, 360), Image.Resampling.BICUBIC, expand=True)
    cx, cy = ramp.width // 2, ramp.height // 2
    mask = ramp.crop((cx - 90, cy - 90, cx + 90, cy + 90)).resize((width, height), Image.Resampling.BILINEAR)
    image = Image.composite(
        Image.new("RGB", (width, height), bottom), Image.new("RGB", (width, height), top), mask
    )
    draw = ImageDraw.Draw(image, "RGBA")  # RGBA fills blend into the RGB picture
    side = min(width, height)
    for _ in range(rng.randint(4, 8)):
        r = rng.uniform(0.08, 0.35) * side
        x, y = rng.uniform(0, width), rng.uniform(0, height)
        fill = (*_color(hue + rng.uniform(-0.3, 0.3), rng.uniform(0.3, 0.8), rng.uniform(0.5, 1.0)), 110)
        shape = rng.randrange(3)
        if shape == 0:
            draw.ellipse((x - r, y - r, x + r, y + r), fill=fill)
        elif shape == 1:
            draw.rounded_rectangle((x - r, y - r * 0.6, x + r, y + r * 0.6), radius=r * 0.2, fill=fill)
        else:
            draw.regular_polygon((x, y, r), 3, rotation=rng.uniform(0, 120), fill=fill)
    return image


def _wrap(text: str, font: ImageFont.FreeTypeFont | ImageFont.ImageFont, max_width: float) -> list[str]:
    """Break `text` into lines no wider than `max_width` pixels, splitting over-long words by character."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if font.getlength(candidate) <= max_width:
            line = candidate
            continue
        if line:
            lines.append(line)
        line = ""
        for char in word:
            if line and font.getlength(line + char) > max_width:
                lines.append(line)
                line = ""
            line += char
    if line:
        lines.append(line)
    return lines


def _caption(draw: ImageDraw.ImageDraw, size: tuple[int, int], text: str, font_size: int) -> None:
    """Draw `text` wrapped on a translucent panel over the lower part of a `size` picture."""
    if not text.strip():
        return
    width, height = size
    font = _font(font_size)
    margin = max(2, font_size // 2)
    line_height = round(font_size * 1.25)
    lines = _wrap(text, font, width - 4 * margin)
    room = max(1, int(height * 0.45 - 2 * margin) // line_height)
    if len(lines) > room:
        lines = [*lines[: room - 1], lines[room - 1] + "..."]
    top = height - margin - 2 * margin - len(lines) * line_height
    draw.rounded_rectangle((margin, top, width - margin, height - margin), radius=margin, fill=(0, 0, 0, 120))
    for i, line in enumerate(lines):
        draw.text((2 * margin, top + margin + i * line_height), line, font=font, fill=(255, 255, 255, 255))


def _image(prompt: str, seed: int, width: int, height: int) -> Image.Image:
    """Compose the picture for an image spec: the seeded canvas with the prompt wrapped onto it."""
    image = _canvas(prompt, seed, width, height)
    _caption(ImageDraw.Draw(image, "RGBA"), image.size, prompt, max(8, min(width, height) // 20))
    return image


def _image_bytes(image: Image.Image, fmt: str) -> bytes:
    """Encode `image` as PNG or JPEG bytes (both encoders are deterministic)."""
    buffer = io.BytesIO()
    if fmt == "jpg":
        image.save(buffer, "JPEG", quality=88)
    else:
        image.save(buffer, "PNG")
    return buffer.getvalue()


def render_image(prompt: str, *, seed: int, width: int, height: int) -> bytes:
    """Render a PNG of a seeded gradient/shape composition with `prompt` drawn on it."""
    return _image_bytes(_image(prompt, seed, width, height), "png")


def render_preview(model_id: str) -> bytes:
    """Render the 320x180 catalog preview card for `model_id`: its own background with the id in big type."""
    image = _canvas(model_id, 0, 320, 180)
    draw = ImageDraw.Draw(image, "RGBA")
    draw.rectangle((0, 118, 320, 180), fill=(0, 0, 0, 140))
    size = 26
    while size > 9 and _font(size).getlength(model_id) > 296:
        size -= 1
    draw.text((12, 149), model_id, font=_font(size), anchor="lm", fill=(255, 255, 255, 255))
    draw.text((12, 10), "model preview", font=_font(12), fill=(255, 255, 255, 210))
    return _image_bytes(image, "png")


def _face_png() -> bytes:
    """Draw the sample portrait (512x512): a frontal face on a blurred backdrop, a lip-sync input."""
    image = _canvas("studio portrait backdrop", 21, 512, 512).filter(ImageFilter.GaussianBlur(14))
    draw = ImageDraw.Draw(image)
    skin, shade, hair, lips, iris = (
        (226, 184, 152),
        (200, 152, 122),
        (58, 40, 30),
        (176, 78, 86),
        (70, 110, 60),
    )
    draw.ellipse((86, 408, 426, 680), fill=(52, 84, 130))  # shoulders
    draw.rectangle((218, 320, 294, 440), fill=shade)  # neck
    draw.ellipse((138, 70, 374, 330), fill=hair)  # hair behind the head
    draw.ellipse((146, 214, 184, 286), fill=shade)  # ears
    draw.ellipse((328, 214, 366, 286), fill=shade)
    draw.ellipse((164, 100, 348, 372), fill=skin)  # face
    draw.chord((156, 84, 356, 214), 180, 360, fill=hair)  # fringe
    for cx, tilt in ((214, -5), (298, 5)):
        draw.ellipse((cx - 22, 222, cx + 22, 246), fill=(250, 250, 248))
        draw.ellipse((cx - 10, 224, cx + 10, 244), fill=iris)
        draw.ellipse((cx - 5, 229, cx + 5, 239), fill=(10, 10, 10))
        draw.line((cx - 24, 206 - tilt, cx + 22, 206 + tilt), fill=hair, width=6)  # eyebrows
    draw.line((256, 244, 246, 292, 262, 298), fill=shade, width=4, joint="curve")  # nose
    draw.chord((220, 312, 292, 344), 0, 180, fill=lips)  # mouth
    draw.line((222, 320, 290, 320), fill=(120, 50, 56), width=2)
    return _image_bytes(image, "png")


# ----------------------------------------------------------------------------------------------- audio

_TABLE_SIZE = 2048  # samples in one stored waveform period (power of two: index with a mask)
_REF_PITCH = 140.0  # voice pitch the vowel tables are shaped for
_FORMANTS: dict[str, tuple[float, float, float]] = {
    "a": (730, 1090, 2440),
    "e": (530, 1840, 2480),
    "i": (270, 2290, 3010),
    "o": (570, 840, 2410),
    "u": (300, 870, 2240),
    "y": (440, 1020, 2240),
}
_ACCENTED = str.maketrans("àáâäãåèéêëìíîïòóôöõùúûüýÿ", "aaaaaaeeeeiiiiooooouuuuyy")
_TOKEN = re.compile(r"[^\W\d_]+|\d+|[.!?;:,]")
_VOWEL_GROUP = re.compile(r"[aeiouy]+")
_FRICATIVES = frozenset("sfhzvxcj")


class _Unit(NamedTuple):
    """One stretch of the synthesized voice: a syllable (vowel set) or a pause (vowel empty)."""

    vowel: str
    seconds: float
    hiss: float  # seconds of consonant noise before the vowel
    pitch: float  # pitch at the start, relative to the speaker's base pitch
    glide: float  # pitch at the end relative to the start
    loudness: float


@functools.lru_cache(maxsize=1)
def _sine_table() -> tuple[float, ...]:
    """Return one period of a sine, sampled at the wavetable size."""
    return tuple(math.sin(2 * math.pi * i / _TABLE_SIZE) for i in range(_TABLE_SIZE))


@functools.lru_cache(maxsize=len(_FORMANTS))
def _vowel_table(vowel: str) -> tuple[float, ...]:
    """Return one period of a voiced `vowel`: 24 harmonics of a 140 Hz voice weighted by its formants."""
    weights = []
    for k in range(1, 25):
        f = k * _REF_PITCH
        gain = sum(1.0 / (1.0 + ((f - formant) / 90.0) ** 2) for formant in _FORMANTS[vowel])
        weights.append((0.15 + gain) / k**0.6)
    sine = _sine_table()
    mask = _TABLE_SIZE - 1
    table = [sum(w * sine[(k * i) & mask] for k, w in enumerate(weights, 1)) for i in range(_TABLE_SIZE)]
    peak = max(abs(v) for v in table)
    return tuple(v / peak for v in table)


@functools.lru_cache(maxsize=1)
def _noise_table() -> tuple[float, ...]:
    """Return 4096 fixed pseudo-random samples in [-1, 1] used for consonant hiss."""
    rng = random.Random(7)
    return tuple(rng.uniform(-1.0, 1.0) for _ in range(4096))


def _speech_units(text: str, rng: random.Random) -> list[_Unit]:
    """Turn `text` into syllables and pauses with a falling phrase intonation (rising on questions)."""
    tokens = _TOKEN.findall(text.lower().translate(_ACCENTED))
    if not any(t[0].isalnum() for t in tokens):  # nothing speakable: babble a seeded pseudo-sentence
        tokens = [
            "".join(rng.choice("bdklmnprstvz") + rng.choice("aeiou") for _ in range(rng.randint(1, 3)))
            for _ in range(10)
        ] + ["."]
    units: list[_Unit] = []
    in_phrase = 0
    for token in tokens:
        if not token[0].isalnum():
            if token == "?" and units and units[-1].vowel:
                units[-1] = units[-1]._replace(glide=1.3)
            units.append(_Unit("", 0.45 if token in ".!?" else 0.25, 0.0, 1.0, 1.0, 0.0))
            in_phrase = 0
            continue
        groups = list(_VOWEL_GROUP.finditer(token)) if token.isalpha() else []
        spans = [(g.start(), g.group()) for g in groups] or [(0, "a")] * max(1, min(4, len(token)))
        for index, (start, letters) in enumerate(spans):
            onset = token[start - 1] if start > 0 else ""
            hiss = 0.07 if onset in _FRICATIVES else 0.025 if onset else 0.0
            pitch = (
                max(0.85, 1.12 - 0.025 * in_phrase) * (1.06 if index == 0 else 1.0) * rng.uniform(0.96, 1.04)
            )
            seconds = min(0.34, 0.13 + 0.05 * len(letters) + rng.uniform(0.0, 0.06))
            units.append(_Unit(letters[0], seconds, hiss, pitch, 0.97, rng.uniform(0.75, 1.0)))
            in_phrase += 1
            if in_phrase >= 10:
                in_phrase = 0
        units.append(_Unit("", rng.uniform(0.04, 0.09), 0.0, 1.0, 1.0, 0.0))
    return units


def _speech_samples(seconds: float, seed: int, text: str) -> array:
    """Synthesize `seconds` of speech-like 16 kHz PCM: formant vowels, hiss, pitch and syllable rhythm.

    The text's syllables are spoken in order and repeated after a breath until the length is filled.
    """
    rng = _rng("speech", seed, text)
    base = rng.uniform(95.0, 210.0)  # the speaker's pitch
    units = [*_speech_units(text, rng), _Unit("", 0.5, 0.0, 1.0, 1.0, 0.0)]
    total = round(seconds * SAMPLE_RATE)
    noise, noise_mask = _noise_table(), 4095
    mask = _TABLE_SIZE - 1
    out: list[int] = []
    phase = 0.0
    index = 0
    while len(out) < total:
        unit = units[index % len(units)]
        index += 1
        n = round(unit.seconds * SAMPLE_RATE)
        if not unit.vowel:
            out.extend([0] * n)
            continue
        lead = round(unit.hiss * SAMPLE_RATE)
        start = len(out)
        for j in range(lead):  # consonant: a noise burst rising then falling
            out.append(int(noise[(start + j) & noise_mask] * 5000 * min(j, lead - j) / lead))
        table = _vowel_table(unit.vowel)
        step = base * unit.pitch * _TABLE_SIZE / SAMPLE_RATE
        slide = step * (unit.glide - 1.0) / n
        inv_attack = 1.0 / max(1, min(n // 4, 320))
        inv_release = 1.0 / max(1, min(n // 3, 900))
        amp = 17000.0 * unit.loudness
        for j in range(n):
            phase += step
            step += slide
            envelope = min(1.0, j * inv_attack, (n - j) * inv_release)
            out.append(int(table[int(phase) & mask] * envelope * amp))
    return array("h", out[:total])


_PROGRESSION = ((0, 4, 7), (7, 11, 14), (9, 12, 16), (5, 9, 12))  # I V vi IV
_ARPEGGIO = (0, 1, 2, 1, 0, 2, 1, 2)


@functools.lru_cache(maxsize=1)
def _tone_table() -> tuple[float, ...]:
    """Return one period of a soft instrument tone: a sine with weak second and third harmonics."""
    sine, mask = _sine_table(), _TABLE_SIZE - 1
    return tuple(
        (sine[i] + 0.3 * sine[(2 * i) & mask] + 0.12 * sine[(3 * i) & mask]) / 1.3 for i in range(_TABLE_SIZE)
    )


def _music_samples(seconds: float, seed: int) -> array:
    """Synthesize `seconds` of 16 kHz PCM music: an arpeggiated I-V-vi-IV loop over a bass, faded out."""
    rng = _rng("music", seed)
    root = rng.choice((48, 50, 52, 53, 55, 57))  # MIDI note of the key
    eighth = 30.0 / rng.uniform(96.0, 124.0)
    table, mask = _tone_table(), _TABLE_SIZE - 1
    total = round(seconds * SAMPLE_RATE)
    melody_decay, bass_decay = 0.99985, 0.99992
    out: list[int] = []
    melody_phase = bass_phase = bass_env = 0.0
    note = 0
    while len(out) < total:
        chord = _PROGRESSION[(note // 8) % len(_PROGRESSION)]
        pitch = root + 12 + chord[_ARPEGGIO[note % 8]] + (12 if note % 16 >= 8 else 0)
        melody_step = 440.0 * 2 ** ((pitch - 69) / 12) * _TABLE_SIZE / SAMPLE_RATE
        bass_step = 440.0 * 2 ** ((root - 12 + chord[0] - 69) / 12) * _TABLE_SIZE / SAMPLE_RATE
        if note % 2 == 0:
            bass_env = 1.0
        melody_env = 1.0
        for _ in range(round((note + 1) * eighth * SAMPLE_RATE) - round(note * eighth * SAMPLE_RATE)):
            melody_phase += melody_step
            bass_phase += bass_step
            value = (
                table[int(melody_phase) & mask] * melody_env * 0.45
                + table[int(bass_phase) & mask] * bass_env * 0.3
            )
            melody_env *= melody_decay
            bass_env *= bass_decay
            out.append(int(value * 26000))
        note += 1
    del out[total:]
    fade = min(total, SAMPLE_RATE // 2)
    for i in range(fade):
        out[total - fade + i] = out[total - fade + i] * (fade - i) // fade
    return array("h", out)


def _wav_bytes(samples: array) -> bytes:
    """Wrap 16 kHz mono 16-bit PCM in a WAV file (stdlib wave)."""
    pcm = array("h", samples)
    if sys.byteorder == "big":  # WAV is little-endian
        pcm.byteswap()
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(SAMPLE_RATE)
        writer.writeframes(pcm.tobytes())
    return buffer.getvalue()


def _audio_stream(container: av.container.OutputContainer, codec: str, bit_rate: int) -> av.audio.AudioStream:
    """Add a mono 48 kHz `codec` stream; PyAV resamples the 16 kHz frames fed to it."""
    stream = container.add_stream(codec, rate=ENCODED_RATE)
    stream.layout = "mono"
    stream.bit_rate = bit_rate
    return stream


def _feed_audio(
    container: av.container.OutputContainer,
    stream: av.audio.AudioStream,
    samples: array,
    start: int,
    stop: int,
) -> int:
    """Encode and mux `samples[start:stop]` in 1024-sample frames; return `stop` as the next start."""
    for offset in range(start, stop, 1024):
        chunk = samples[offset : min(offset + 1024, stop)]
        frame = av.AudioFrame(format="s16", layout="mono", samples=len(chunk))
        frame.planes[0].update(chunk.tobytes())
        frame.sample_rate = SAMPLE_RATE
        frame.pts = offset
        container.mux(stream.encode(frame))
    return stop


def _mp3_bytes(samples: array) -> bytes:
    """Encode 16 kHz PCM as a 48 kHz mono MP3 with libmp3lame."""
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp3") as container:
        stream = _audio_stream(container, "libmp3lame", 64_000)
        _feed_audio(container, stream, samples, 0, len(samples))
        container.mux(stream.encode())
    return buffer.getvalue()


def render_audio(seconds: float, *, seed: int, text: str = "", fmt: str = "wav") -> bytes:
    """Render `seconds` of speech-like audio shaped by `text` as WAV (16 kHz mono 16-bit) or MP3."""
    samples = _speech_samples(seconds, seed, text)
    return _mp3_bytes(samples) if fmt == "mp3" else _wav_bytes(samples)


def render_music(seconds: float, *, seed: int, fmt: str = "mp3") -> bytes:
    """Render `seconds` of a simple chord-loop music bed as MP3 or WAV."""
    samples = _music_samples(seconds, seed)
    return _mp3_bytes(samples) if fmt == "mp3" else _wav_bytes(samples)


# ----------------------------------------------------------------------------------------------- video


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
    rng = _rng("video", seed, prompt)
    shot_seconds = rng.uniform(3.0, 6.0)
    pan_x, pan_y = rng.uniform(5.0, 9.0), rng.uniform(6.0, 11.0)
    ball_vx, ball_vy = rng.uniform(0.2, 0.45), rng.uniform(0.25, 0.5)
    bw, bh = width + width // 2, height + height // 2
    caption = Image.new("RGBA", (width, height))
    _caption(ImageDraw.Draw(caption), caption.size, prompt, max(8, min(width, height) // 14))
    clock_font = _font(max(8, min(width, height) // 14))
    radius = max(3, min(width, height) // 12)
    shot = 0
    background = _canvas(prompt, seed, bw, bh, variant=1)
    for i in range(max(1, round(seconds * fps))):
        t = i / fps
        if int(t // shot_seconds) != shot:
            shot = int(t // shot_seconds)
            background = _canvas(prompt, seed, bw, bh, variant=shot + 1)
        x = round((bw - width) * 0.5 * (1 + math.sin(2 * math.pi * t / pan_x + shot)))
        y = round((bh - height) * 0.5 * (1 + math.cos(2 * math.pi * t / pan_y + shot)))
        frame = background.crop((x, y, x + width, y + height))
        frame.paste(caption, (0, 0), caption)
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


def _mp4_bytes(
    frames: Iterator[Image.Image], width: int, height: int, fps: int, samples: array | None
) -> bytes:
    """Encode frames (and optional 16 kHz PCM as AAC, interleaved) into an H.264 yuv420p MP4 with +faststart.

    The mp4 muxer's faststart pass re-reads its output, which needs a real file, so it goes via a temp dir.
    """
    with tempfile.TemporaryDirectory(prefix="mediagen-") as tmp:
        path = os.path.join(tmp, "out.mp4")
        with av.open(path, "w", format="mp4", options={"movflags": "+faststart"}) as container:
            video = container.add_stream("libx264", rate=fps)
            video.width, video.height, video.pix_fmt = width, height, "yuv420p"
            video.options = {"preset": "ultrafast", "crf": "28"}
            sound = None
            if samples is not None:
                sound = _audio_stream(container, "aac", 64_000)
                sound.options = {"aac_coder": "fast"}  # the default "twoloop" coder is 4x slower
            fed = 0
            for i, image in enumerate(frames):
                frame = av.VideoFrame.from_image(image)
                frame.pts = i
                container.mux(video.encode(frame))
                if sound is not None and samples is not None:
                    fed = _feed_audio(
                        container, sound, samples, fed, min(len(samples), (i + 1) * SAMPLE_RATE // fps)
                    )
            container.mux(video.encode())
            if sound is not None and samples is not None:
                _feed_audio(container, sound, samples, fed, len(samples))
                container.mux(sound.encode())
        return Path(path).read_bytes()


def render_video(
    prompt: str, *, seconds: float, seed: int, width: int, height: int, audio: bool = False
) -> bytes:
    """Render a small H.264 MP4 of a moving seeded composition with `prompt` on it, optionally with speech.

    Frames are scaled to at most 320 px on the long side (even sides) at 12/8/4 fps by length, for speed.
    """
    w, h, fps = _video_geometry(width, height, seconds)
    samples = _speech_samples(seconds, seed, prompt) if audio else None
    return _mp4_bytes(_video_frames(prompt, seed, w, h, fps, seconds), w, h, fps, samples)


def render(spec: MediaSpec) -> bytes:
    """Render the file `spec` describes."""
    if spec.kind == "image":
        return _image_bytes(_image(spec.prompt, spec.seed, spec.width, spec.height), spec.fmt)
    if spec.kind == "audio":
        return render_audio(spec.seconds, seed=spec.seed, text=spec.prompt, fmt=spec.fmt)
    return render_video(
        spec.prompt,
        seconds=spec.seconds,
        seed=spec.seed,
        width=spec.width,
        height=spec.height,
        audio=spec.audio,
    )


_READERS: dict[str, type[WAVE] | type[MP3] | type[MP4]] = {"wav": WAVE, "mp3": MP3, "mp4": MP4}


def measure_seconds(data: bytes, ext: str) -> float | None:
    """Return the length mutagen reads from .wav/.mp3/.mp4 bytes (as the service meters), else None."""
    reader = _READERS.get(ext.lower().lstrip("."))
    if reader is None:
        return None
    try:
        length = float(reader(io.BytesIO(data)).info.length or 0.0)
    except Exception:  # mutagen's parsers raise assorted errors on garbage; all mean "unreadable"
        return None
    return length if length > 0 and math.isfinite(length) else None


# --------------------------------------------------------------------------------------------- samples


def _broken_mp4() -> bytes:
    """Build bytes that look like an MP4 (ftyp + mdat) but have no moov box, so no duration can be read."""
    ftyp = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomavc1"
    payload = _rng("broken").randbytes(4096)
    return ftyp + (8 + len(payload)).to_bytes(4, "big") + b"mdat" + payload


_SCRIPT = (
    "Hello, and welcome back! Today I will show you three quick ideas that make a short video feel natural. "
    "Ready? Let's begin with the light."
)

SAMPLES: dict[str, MediaSpec | Callable[[], bytes]] = {
    "face.png": _face_png,
    "voice.wav": MediaSpec(kind="audio", prompt=_SCRIPT, seconds=8.0, seed=1, fmt="wav"),
    "voice.mp3": MediaSpec(kind="audio", prompt=_SCRIPT, seconds=8.0, seed=1, fmt="mp3"),
    "short-voice.wav": MediaSpec(kind="audio", prompt="Hi there, this is a quick test.", seconds=3.0, seed=2),
    "clip.mp4": MediaSpec(
        kind="video",
        prompt="Source clip: a creator talks to camera about morning routines",
        seconds=24.0,
        seed=3,
        width=180,
        height=320,
        fmt="mp4",
        audio=True,
    ),
    "long.mp4": MediaSpec(
        kind="video", prompt="A long recording", seconds=150.0, seed=4, width=72, height=128
    ),
    "broken.mp4": _broken_mp4,
    "music.mp3": functools.partial(render_music, 20.0, seed=5, fmt="mp3"),
    "photo.jpg": MediaSpec(
        kind="image", prompt="A harbour at dawn", seed=6, width=640, height=480, fmt="jpg"
    ),
}

_PREVIEW = re.compile(r"preview-([a-z0-9][a-z0-9._-]{0,79})\.png")  # a catalog-like model id


# ------------------------------------------------------------------------------------------------ store


def _media_name(spec: MediaSpec) -> str:
    """Return the file name of `spec`: a hash of its fields (stable across processes) plus its format."""
    payload = json.dumps(asdict(spec), sort_keys=True, separators=(",", ":"))
    return f"{hashlib.sha256(payload.encode()).hexdigest()[:20]}.{spec.fmt}"


class MediaStore:
    """Registered media files, rendered on first read (in a worker thread) and cached."""

    def __init__(self, data_dir: Path | None = None, memory_bytes: int = 64 * 2**20) -> None:
        """Open the store; with `data_dir`, rendered files and registrations persist under data_dir/media."""
        self._dir = Path(data_dir) / "media" if data_dir is not None else None
        self._memory_bytes = memory_bytes
        self._lock = threading.Lock()
        self._specs: dict[str, MediaSpec] = {}
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cached_bytes = 0
        self._pending: dict[str, Future[bytes]] = {}
        if self._dir is not None:
            self._dir.mkdir(parents=True, exist_ok=True)
            self._load_index(self._dir / "index.jsonl")

    @property
    def cached_bytes(self) -> int:
        """Bytes currently held by the in-memory LRU cache (never above memory_bytes)."""
        return self._cached_bytes

    def _load_index(self, index: Path) -> None:
        """Re-register the specs recorded by earlier runs, so their names stay readable after a restart."""
        try:
            lines = index.read_text().splitlines()
        except FileNotFoundError:
            return
        for line in lines:
            try:
                record = json.loads(line)
                self._specs[record["name"]] = MediaSpec(**record["spec"])
            except (ValueError, TypeError, KeyError):
                continue  # a torn last line from a crash: skip it

    def add(self, spec: MediaSpec) -> str:
        """Register `spec` without rendering it and return its file name "<hex id>.<fmt>"."""
        name = _media_name(spec)
        with self._lock:
            if name not in self._specs:
                self._specs[name] = spec
                if self._dir is not None:
                    with (self._dir / "index.jsonl").open("a") as index:
                        index.write(json.dumps({"name": name, "spec": asdict(spec)}) + "\n")
        return name

    def known(self, name: str) -> bool:
        """Tell whether `name` is a registered file, a sample file or a "preview-<model id>.png" card."""
        return name in self._specs or name in SAMPLES or _PREVIEW.fullmatch(name) is not None

    async def read(self, name: str) -> tuple[bytes, str] | None:
        """Return (bytes, content type) of `name`, rendered in a worker thread on first read, or None."""
        if not self.known(name):
            return None
        claim = self._claim(name)
        if isinstance(claim, bytes):
            return claim, _content_type(name)
        pending, owner = claim
        data = (
            await asyncio.to_thread(self._fulfil, name, pending)
            if owner
            else await asyncio.wrap_future(pending)
        )
        return data, _content_type(name)

    def read_sync(self, name: str) -> tuple[bytes, str] | None:
        """Blocking `read`, for worker threads."""
        if not self.known(name):
            return None
        claim = self._claim(name)
        if isinstance(claim, bytes):
            return claim, _content_type(name)
        pending, owner = claim
        return (self._fulfil(name, pending) if owner else pending.result()), _content_type(name)

    def _claim(self, name: str) -> bytes | tuple[Future[bytes], bool]:
        """Return cached bytes, else the in-flight render's future and whether this caller must run it."""
        with self._lock:
            data = self._cache.get(name)
            if data is not None:
                self._cache.move_to_end(name)
                return data
            pending = self._pending.get(name)
            if pending is not None:
                return pending, False
            pending = Future()
            pending.set_running_or_notify_cancel()  # running futures cannot be cancelled by a waiter
            self._pending[name] = pending
            return pending, True

    def _fulfil(self, name: str, pending: Future[bytes]) -> bytes:
        """Load `name` from disk or render it, cache it, and settle `pending` for concurrent readers."""
        try:
            data = self._load_or_render(name)
        except BaseException as exc:
            with self._lock:
                del self._pending[name]
            pending.set_exception(exc)
            raise
        with self._lock:
            del self._pending[name]
            if len(data) <= self._memory_bytes:
                self._cache[name] = data
                self._cached_bytes += len(data)
                while self._cached_bytes > self._memory_bytes:
                    self._cached_bytes -= len(self._cache.popitem(last=False)[1])
        pending.set_result(data)
        return data

    def _load_or_render(self, name: str) -> bytes:
        """Return the disk copy of `name` if there is one, else render it (and write the disk copy)."""
        path = self._dir / name if self._dir is not None else None
        if path is not None and path.is_file():
            return path.read_bytes()
        data = self._render(name)
        if path is not None:
            temp = path.with_name(f".{name}.{os.getpid()}.{threading.get_ident()}.tmp")
            temp.write_bytes(data)
            os.replace(temp, path)  # atomic: a crash never leaves a half-written file under the real name
        return data

    def _render(self, name: str) -> bytes:
        """Render a registered spec, a sample or a preview card."""
        spec = self._specs.get(name)
        if spec is not None:
            return render(spec)
        sample = SAMPLES.get(name)
        if isinstance(sample, MediaSpec):
            return render(sample)
        if sample is not None:
            return sample()
        preview = _PREVIEW.fullmatch(name)
        assert preview is not None  # known() was checked by the caller
        return render_preview(preview.group(1))


def _content_type(name: str) -> str:
    """Return the MIME type for a file name's extension."""
    return CONTENT_TYPES.get(name.rsplit(".", 1)[-1].lower(), "application/octet-stream")
