"""Encoding PCM and frames into files: WAV (stdlib), MP3 (libmp3lame) and H.264/AAC MP4 (PyAV).

PyAV (about 0.1 s to import) loads on the first MP3 or MP4, so a sandbox that serves only images never
loads it.
"""

import io
import os
import sys
import tempfile
import wave
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from PIL import Image

if TYPE_CHECKING:
    import av

SAMPLE_RATE = 16_000  # synthesized PCM: 16 kHz mono 16-bit
ENCODED_RATE = 48_000  # MP3/AAC rate: short codec frames keep the measured length within ~0.05 s


def wav_bytes(samples: array) -> bytes:
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


def _audio_stream(
    container: "av.container.OutputContainer", codec: str, bit_rate: int
) -> "av.audio.AudioStream":
    """Add a mono 48 kHz `codec` stream; PyAV resamples the 16 kHz frames fed to it."""
    import av

    stream = container.add_stream(codec, rate=ENCODED_RATE)
    assert isinstance(stream, av.AudioStream)
    stream.layout = "mono"
    stream.bit_rate = bit_rate
    return stream


def _feed_audio(
    container: "av.container.OutputContainer",
    stream: "av.audio.AudioStream",
    samples: array,
    start: int,
    stop: int,
) -> int:
    """Encode and mux `samples[start:stop]` in 1024-sample frames; return `stop` as the next start."""
    import av

    for offset in range(start, stop, 1024):
        chunk = samples[offset : min(offset + 1024, stop)]
        frame = av.AudioFrame(format="s16", layout="mono", samples=len(chunk))
        frame.planes[0].update(chunk.tobytes())
        frame.sample_rate = SAMPLE_RATE
        frame.pts = offset
        container.mux(stream.encode(frame))
    return stop


def mp3_bytes(samples: array) -> bytes:
    """Encode 16 kHz PCM as a 48 kHz mono MP3 with libmp3lame."""
    import av

    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp3") as container:
        stream = _audio_stream(container, "libmp3lame", 64_000)
        _feed_audio(container, stream, samples, 0, len(samples))
        container.mux(stream.encode())
    return buffer.getvalue()


def mp4_bytes(
    frames: Iterator[Image.Image], width: int, height: int, fps: int, samples: array | None
) -> bytes:
    """Encode frames (and optional 16 kHz PCM as AAC, interleaved) into an H.264 yuv420p MP4 with +faststart.

    The mp4 muxer's faststart pass re-reads its output, which needs a real file, so it goes via a temp dir.
    """
    import av

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
