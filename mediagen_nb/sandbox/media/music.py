"""Synthesizing a music bed: an arpeggiated I-V-vi-IV loop over a bass, faded out."""

import functools
from array import array

from mediagen_nb.sandbox.media.encoding import SAMPLE_RATE
from mediagen_nb.sandbox.media.spec import seeded
from mediagen_nb.sandbox.media.speech import TABLE_SIZE, sine_table

_PROGRESSION = ((0, 4, 7), (7, 11, 14), (9, 12, 16), (5, 9, 12))  # I V vi IV
_ARPEGGIO = (0, 1, 2, 1, 0, 2, 1, 2)


@functools.lru_cache(maxsize=1)
def _tone_table() -> tuple[float, ...]:
    """Return one period of a soft instrument tone: a sine with weak second and third harmonics."""
    sine, mask = sine_table(), TABLE_SIZE - 1
    return tuple(
        (sine[i] + 0.3 * sine[(2 * i) & mask] + 0.12 * sine[(3 * i) & mask]) / 1.3 for i in range(TABLE_SIZE)
    )


def music_samples(seconds: float, seed: int) -> array:
    """Synthesize `seconds` of 16 kHz PCM music: an arpeggiated I-V-vi-IV loop over a bass, faded out."""
    rng = seeded("music", seed)
    root = rng.choice((48, 50, 52, 53, 55, 57))  # MIDI note of the key
    eighth = 30.0 / rng.uniform(96.0, 124.0)
    table, mask = _tone_table(), TABLE_SIZE - 1
    total = round(seconds * SAMPLE_RATE)
    melody_decay, bass_decay = 0.99985, 0.99992
    out: list[int] = []
    melody_phase = bass_phase = bass_env = 0.0
    note = 0
    while len(out) < total:
        chord = _PROGRESSION[(note // 8) % len(_PROGRESSION)]
        pitch = root + 12 + chord[_ARPEGGIO[note % 8]] + (12 if note % 16 >= 8 else 0)
        melody_step = 440.0 * 2 ** ((pitch - 69) / 12) * TABLE_SIZE / SAMPLE_RATE
        bass_step = 440.0 * 2 ** ((root - 12 + chord[0] - 69) / 12) * TABLE_SIZE / SAMPLE_RATE
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
