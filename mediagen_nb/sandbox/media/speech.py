"""Synthesizing speech-like audio: formant vowels, consonant hiss, pitch and syllable rhythm from a text."""

import functools
import math
import random
import re
from array import array
from typing import NamedTuple

from mediagen_nb.sandbox.media.encoding import SAMPLE_RATE
from mediagen_nb.sandbox.media.spec import seeded

TABLE_SIZE = 2048  # samples in one stored waveform period (power of two: index with a mask)
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
def sine_table() -> tuple[float, ...]:
    """Return one period of a sine, sampled at the wavetable size."""
    return tuple(math.sin(2 * math.pi * i / TABLE_SIZE) for i in range(TABLE_SIZE))


@functools.lru_cache(maxsize=len(_FORMANTS))
def _vowel_table(vowel: str) -> tuple[float, ...]:
    """Return one period of a voiced `vowel`: 24 harmonics of a 140 Hz voice weighted by its formants."""
    weights = []
    for k in range(1, 25):
        f = k * _REF_PITCH
        gain = sum(1.0 / (1.0 + ((f - formant) / 90.0) ** 2) for formant in _FORMANTS[vowel])
        weights.append((0.15 + gain) / k**0.6)
    sine = sine_table()
    mask = TABLE_SIZE - 1
    table = [sum(w * sine[(k * i) & mask] for k, w in enumerate(weights, 1)) for i in range(TABLE_SIZE)]
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


def speech_samples(seconds: float, seed: int, text: str) -> array:
    """Synthesize `seconds` of speech-like 16 kHz PCM: formant vowels, hiss, pitch and syllable rhythm.

    The text's syllables are spoken in order and repeated after a breath until the length is filled.
    """
    rng = seeded("speech", seed, text)
    base = rng.uniform(95.0, 210.0)  # the speaker's pitch
    units = [*_speech_units(text, rng), _Unit("", 0.5, 0.0, 1.0, 1.0, 0.0)]
    total = round(seconds * SAMPLE_RATE)
    noise, noise_mask = _noise_table(), 4095
    mask = TABLE_SIZE - 1
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
        step = base * unit.pitch * TABLE_SIZE / SAMPLE_RATE
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
