"""What a ``MediaSpec`` renders to: the one dispatch from a spec to a file's bytes.

Equal specs render equal bytes, so the files rendered last are kept for every sandbox of this process
(a bounded LRU): a test session or a notebook that starts many sandboxes renders each file once.
"""

from mediagen_nb.sandbox.media.encoding import mp3_bytes, wav_bytes
from mediagen_nb.sandbox.media.images import image_bytes, picture
from mediagen_nb.sandbox.media.lru import BytesLRU
from mediagen_nb.sandbox.media.music import music_samples
from mediagen_nb.sandbox.media.spec import MediaSpec
from mediagen_nb.sandbox.media.speech import speech_samples
from mediagen_nb.sandbox.media.video import render_video


def render_audio(seconds: float, *, seed: int, text: str = "", fmt: str = "wav") -> bytes:
    """Render `seconds` of speech-like audio shaped by `text` as WAV (16 kHz mono 16-bit) or MP3."""
    samples = speech_samples(seconds, seed, text)
    return mp3_bytes(samples) if fmt == "mp3" else wav_bytes(samples)


def render_music(seconds: float, *, seed: int, fmt: str = "mp3") -> bytes:
    """Render `seconds` of a simple chord-loop music bed as MP3 or WAV."""
    samples = music_samples(seconds, seed)
    return mp3_bytes(samples) if fmt == "mp3" else wav_bytes(samples)


RENDERED: BytesLRU[MediaSpec] = BytesLRU(limit=64 * 2**20)


def render(spec: MediaSpec) -> bytes:
    """The file `spec` describes (rendered, or kept from an earlier render in this process)."""
    data = RENDERED.get(spec)
    if data is None:
        data = _render(spec)
        RENDERED.keep(spec, data)
    return data


def _render(spec: MediaSpec) -> bytes:
    if spec.kind == "image":
        return image_bytes(picture(spec.prompt, spec.seed, spec.width, spec.height), spec.fmt)
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
