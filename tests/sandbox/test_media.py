"""The sandbox's media renderer and store: real, valid, deterministic files, rendered lazily and cached."""

import asyncio
import io
import os
import re
import subprocess
import sys
import threading
import wave
from array import array
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import av
import pytest
from _shared import fresh_python
from mutagen.mp3 import MP3
from PIL import Image

from mediagen_nb.sandbox import media
from mediagen_nb.sandbox.media import (
    CONTENT_TYPES,
    SAMPLES,
    MediaSpec,
    MediaStore,
    images,
    measure_seconds,
    rendering,
)

NAME = re.compile(r"[0-9a-f]{20}\.(png|jpg|wav|mp3|mp4)")


def _video_info(data: bytes) -> dict[str, object]:
    """Open MP4 bytes with PyAV and report what a player would see."""
    with av.open(io.BytesIO(data)) as container:
        video = container.streams.video[0]
        info: dict[str, object] = {
            "codec": video.codec_context.name,
            "pix_fmt": video.codec_context.pix_fmt,
            "size": (video.codec_context.width, video.codec_context.height),
            "audio": [s.codec_context.name for s in container.streams.audio],
            "frames": sum(1 for _ in container.decode(video=0)),
        }
    return info


class Gate:
    """Renders held until ``readers`` reads of a store have claimed their file (found its render in flight,
    or started it): the render is then one every reader waits on, however the threads are scheduled."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, store: MediaStore, readers: int) -> None:
        self._lock = threading.Lock()
        self._open = threading.Event()
        self.expect(readers)
        claim = store._claim

        def counted(name: str) -> bytes | tuple[Future[bytes], bool]:
            found = claim(name)
            with self._lock:
                self._claims += 1
                if self._claims >= self._readers:
                    self._open.set()
            return found

        monkeypatch.setattr(store, "_claim", counted)

    def expect(self, readers: int) -> None:
        """Hold the next render until ``readers`` more reads have claimed."""
        with self._lock:
            self._claims, self._readers = 0, readers
            self._open.clear()

    def hold(self) -> None:
        """Wait (in the rendering thread) until every expected reader has claimed."""
        assert self._open.wait(30), f"only {self._claims} of {self._readers} readers came"


def _count_renders(monkeypatch: pytest.MonkeyPatch, gate: Gate | None = None) -> list[MediaSpec]:
    """Wrap the store's render so a test can see which specs it rendered (held at ``gate``, if given)."""
    calls: list[MediaSpec] = []
    real = rendering.render

    def counting(spec: MediaSpec) -> bytes:
        calls.append(spec)
        if gate is not None:
            gate.hold()
        return real(spec)

    monkeypatch.setattr(rendering, "render", counting)
    return calls


def _image_spec(seed: int) -> MediaSpec:
    return MediaSpec(kind="image", prompt=f"picture {seed}", seed=seed, width=64, height=64)


# ---------------------------------------------------------------------------------------------- images


def test_image_is_a_png_of_the_requested_size_and_deterministic() -> None:
    data = media.render_image("A red fox in the snow", seed=3, width=512, height=384)
    image = Image.open(io.BytesIO(data))
    assert (image.format, image.size) == ("PNG", (512, 384))
    assert len(image.getcolors(maxcolors=1 << 20) or []) > 100  # a composition, not a flat fill
    assert media.render_image("A red fox in the snow", seed=3, width=512, height=384) == data
    assert media.render_image("A red fox in the snow", seed=4, width=512, height=384) != data
    assert media.render_image("A grey wolf in the snow", seed=3, width=512, height=384) != data


def test_image_draws_the_prompt() -> None:
    background = images.canvas("Hello", 1, 200, 200)
    drawn = Image.open(io.BytesIO(media.render_image("Hello", seed=1, width=200, height=200))).convert("RGB")
    assert background.crop((0, 0, 200, 60)).tobytes() == drawn.crop((0, 0, 200, 60)).tobytes()
    assert background.crop((0, 140, 200, 200)).tobytes() != drawn.crop((0, 140, 200, 200)).tobytes()


def test_a_long_prompt_fits_small_images() -> None:
    data = media.render_image("word " * 400 + "x" * 300, seed=1, width=48, height=40)
    assert Image.open(io.BytesIO(data)).size == (48, 40)


def test_image_spec_can_be_jpeg() -> None:
    data = media.render(MediaSpec(kind="image", prompt="harbour", seed=1, width=120, height=80, fmt="jpg"))
    image = Image.open(io.BytesIO(data))
    assert (image.format, image.size) == ("JPEG", (120, 80))


# ----------------------------------------------------------------------------------------------- audio


@pytest.mark.parametrize("seconds", [1.0, 3.0, 8.0, 10.3])
def test_wav_is_16k_mono_16bit_of_the_requested_length(seconds: float) -> None:
    data = media.render_audio(seconds, seed=1, text="Hello there, welcome back!")
    with wave.open(io.BytesIO(data)) as reader:
        assert (reader.getframerate(), reader.getnchannels(), reader.getsampwidth()) == (16000, 1, 2)
        assert reader.getnframes() == round(seconds * 16000)
    measured = measure_seconds(data, "wav")
    assert measured is not None and abs(measured - seconds) < 0.1


@pytest.mark.parametrize("seconds", [3.0, 8.0, 12.7])
def test_mp3_has_the_requested_length(seconds: float) -> None:
    data = media.render_audio(seconds, seed=2, text="A short line of speech.", fmt="mp3")
    assert MP3(io.BytesIO(data)).info.channels == 1
    measured = measure_seconds(data, ".mp3")
    assert measured is not None and abs(measured - seconds) < 0.1


def test_audio_is_deterministic_and_shaped_by_text_and_seed() -> None:
    data = media.render_audio(4.0, seed=1, text="one two three")
    assert media.render_audio(4.0, seed=1, text="one two three") == data
    assert media.render_audio(4.0, seed=1, text="something else entirely") != data
    assert media.render_audio(4.0, seed=2, text="one two three") != data
    assert media.render_audio(4.0, seed=1, text="one two three", fmt="mp3") == media.render_audio(
        4.0, seed=1, text="one two three", fmt="mp3"
    )


def test_speech_has_syllables_and_pauses_not_a_steady_beep() -> None:
    with wave.open(io.BytesIO(media.render_audio(6.0, seed=1, text="Hello, how are you today? Fine."))) as r:
        pcm = array("h", r.readframes(r.getnframes()))
    if sys.byteorder == "big":
        pcm.byteswap()
    window = 800  # 50 ms
    levels = [max(abs(v) for v in pcm[i : i + window]) for i in range(0, len(pcm) - window, window)]
    assert max(levels) > 8000
    assert sum(level < 300 for level in levels) >= 3  # pauses between words and phrases
    assert sum(level > 4000 for level in levels) >= 20  # voiced syllables
    crossings = [
        sum((pcm[i + j] < 0) != (pcm[i + j + 1] < 0) for j in range(window - 1))
        for i in range(0, len(pcm) - window, window)
    ]
    assert len({c for c, level in zip(crossings, levels, strict=True) if level > 4000}) > 5  # timbre varies


def test_music_sample_is_twenty_seconds() -> None:
    music = SAMPLES["music.mp3"]
    assert callable(music)
    measured = measure_seconds(music(), "mp3")
    assert measured is not None and abs(measured - 20.0) < 0.1


# ----------------------------------------------------------------------------------------------- video


def test_video_is_small_h264_with_aac_and_faststart() -> None:
    data = media.render_video(
        "A cat on a skateboard", seconds=5.0, seed=1, width=1080, height=1920, audio=True
    )
    info = _video_info(data)
    assert info["codec"] == "h264" and info["pix_fmt"] == "yuv420p"
    assert info["size"] == (180, 320)
    assert info["audio"] == ["aac"]
    assert info["frames"] == 60
    measured = measure_seconds(data, "mp4")
    assert measured is not None and abs(measured - 5.0) < 0.25
    assert 0 < data.find(b"moov") < data.find(b"mdat")  # +faststart: index first, so browsers can stream it


def test_video_rounds_odd_sizes_to_even_and_can_be_silent() -> None:
    data = media.render_video("odd", seconds=2.3, seed=1, width=101, height=57)
    info = _video_info(data)
    assert info["size"] == (102, 58)
    assert info["audio"] == []
    measured = measure_seconds(data, "mp4")
    assert measured is not None and abs(measured - 2.3) < 0.25


def test_video_is_deterministic() -> None:
    spec = MediaSpec(kind="video", prompt="waves", seconds=2.0, seed=5, width=160, height=90, audio=True)
    data = media.render(spec)
    assert media.render(spec) == data
    assert (
        media.render(MediaSpec(kind="video", prompt="waves", seconds=2.0, seed=6, width=160, height=90))
        != data
    )


# ------------------------------------------------------------------------------------ measuring lengths


@pytest.mark.parametrize("ext", ["wav", "mp3", "mp4", ".MP4"])
@pytest.mark.parametrize("data", [b"", b"not media at all" * 100, bytes(range(256)) * 40])
def test_measure_seconds_returns_none_for_garbage(data: bytes, ext: str) -> None:
    assert measure_seconds(data, ext) is None


def test_measure_seconds_returns_none_for_broken_mp4_and_unknown_extensions() -> None:
    broken = SAMPLES["broken.mp4"]
    assert callable(broken)
    assert measure_seconds(broken(), "mp4") is None
    assert measure_seconds(media.render_audio(2.0, seed=1), "ogg") is None


# -------------------------------------------------------------------------------------------- the spec


def test_spec_defaults_format_by_kind_and_validates() -> None:
    assert MediaSpec(kind="audio", seconds=2).fmt == "wav"
    assert MediaSpec(kind="video", seconds=2).fmt == "mp4"
    assert MediaSpec(kind="audio", seconds=2) == MediaSpec(kind="audio", seconds=2.0, fmt="wav")
    with pytest.raises(ValueError):
        MediaSpec(kind="hologram")
    with pytest.raises(ValueError):
        MediaSpec(kind="audio", seconds=2, fmt="mp4")
    with pytest.raises(ValueError):
        MediaSpec(kind="video", seconds=0)
    with pytest.raises(ValueError):
        MediaSpec(kind="image", width=0)


def test_content_types() -> None:
    assert CONTENT_TYPES == {
        "png": "image/png",
        "jpg": "image/jpeg",
        "wav": "audio/wav",
        "mp3": "audio/mpeg",
        "mp4": "video/mp4",
    }


# ----------------------------------------------------------------------------------------------- store


def test_add_is_lazy_and_deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_renders(monkeypatch)
    store = MediaStore()
    spec = MediaSpec(kind="video", prompt="lazy", seconds=60.0, seed=1, width=320, height=180, audio=True)
    name = store.add(spec)
    assert calls == []  # lazy: nothing is drawn until the file is read
    assert NAME.fullmatch(name) and name.endswith(".mp4")
    assert store.add(spec) == name
    same = MediaSpec(kind="video", prompt="lazy", seconds=60, seed=1, width=320, height=180, audio=True)
    assert MediaStore().add(same) == name
    assert (
        store.add(MediaSpec(kind="video", prompt="lazy", seconds=60.0, seed=2, width=320, height=180)) != name
    )


def test_names_are_the_same_in_another_process() -> None:
    spec = "MediaSpec(kind='audio', prompt='same everywhere', seconds=3, seed=9, fmt='mp3')"
    code = f"from mediagen_nb.sandbox.media import MediaSpec, MediaStore; print(MediaStore().add({spec}))"
    names = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parents[2],
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    local = MediaStore().add(MediaSpec(kind="audio", prompt="same everywhere", seconds=3, seed=9, fmt="mp3"))
    assert names == {local}


def test_read_renders_once_then_serves_from_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_renders(monkeypatch)
    store = MediaStore()
    name = store.add(MediaSpec(kind="audio", prompt="cached", seconds=1.5, seed=1))
    first = asyncio.run(store.read(name))
    assert first is not None
    data, content_type = first
    assert content_type == "audio/wav"
    assert measure_seconds(data, "wav") == pytest.approx(1.5, abs=0.01)
    assert asyncio.run(store.read(name)) == first
    assert store.read_sync(name) == first
    assert len(calls) == 1


def test_unknown_names_are_none() -> None:
    store = MediaStore()
    for name in ("0123456789abcdef0123.png", "nope.mp4", "index.jsonl", "../face.png", "preview-.png"):
        assert not store.known(name)
        assert asyncio.run(store.read(name)) is None
        assert store.read_sync(name) is None


def test_concurrent_reads_render_once(monkeypatch: pytest.MonkeyPatch) -> None:
    store = MediaStore()
    gate = Gate(monkeypatch, store, readers=8)
    calls = _count_renders(monkeypatch, gate)
    name = store.add(_image_spec(1))

    async def many() -> list[tuple[bytes, str] | None]:
        return await asyncio.gather(*(store.read(name) for _ in range(8)))

    results = asyncio.run(many())
    assert len(calls) == 1
    assert all(result == results[0] for result in results)

    other = store.add(_image_spec(2))
    gate.expect(6)
    found: list[tuple[bytes, str] | None] = []
    threads = [threading.Thread(target=lambda: found.append(store.read_sync(other))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 2
    assert len(found) == 6 and all(result == found[0] is not None for result in found)


def test_a_failed_render_reaches_every_reader_and_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    store = MediaStore()
    name = store.add(_image_spec(3))
    gate = Gate(monkeypatch, store, readers=2)

    def failing(spec: MediaSpec) -> bytes:
        gate.hold()  # the render fails late, while the other reader waits on it
        raise RuntimeError("encoder exploded")

    monkeypatch.setattr(rendering, "render", failing)

    async def both() -> list[object]:
        return await asyncio.gather(store.read(name), store.read(name), return_exceptions=True)

    assert [str(error) for error in asyncio.run(both())] == ["encoder exploded"] * 2
    monkeypatch.undo()
    assert store.read_sync(name) is not None


def test_memory_cache_is_a_bounded_lru(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_renders(monkeypatch)
    size = len(media.render(_image_spec(1)))
    calls.clear()
    store = MediaStore(memory_bytes=int(size * 2.5))
    names = [store.add(_image_spec(seed)) for seed in (1, 2, 3)]
    for name in names:
        store.read_sync(name)
        assert store.cached_bytes <= int(size * 2.5)
    assert len(calls) == 3
    store.read_sync(names[2])  # most recent: still cached
    assert len(calls) == 3
    store.read_sync(names[0])  # least recent: evicted, rendered again
    assert len(calls) == 4
    tiny = MediaStore(memory_bytes=10)
    assert tiny.read_sync(tiny.add(_image_spec(1))) is not None
    assert tiny.cached_bytes == 0


def test_data_dir_survives_a_restart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_renders(monkeypatch)
    store = MediaStore(tmp_path)
    read_before = store.add(_image_spec(1))
    never_read = store.add(MediaSpec(kind="audio", prompt="later", seconds=1.0, seed=1, fmt="mp3"))
    first = store.read_sync(read_before)
    assert first is not None
    assert (tmp_path / "media" / read_before).read_bytes() == first[0]
    assert len(calls) == 1

    restarted = MediaStore(tmp_path)
    assert restarted.known(read_before) and restarted.known(never_read)
    assert asyncio.run(restarted.read(read_before)) == first
    assert len(calls) == 1  # served from disk, not rendered again
    later = restarted.read_sync(never_read)
    assert later is not None and later[1] == "audio/mpeg"
    assert len(calls) == 2
    assert not [p for p in (tmp_path / "media").iterdir() if p.name.endswith(".tmp")]


def test_a_torn_index_line_is_skipped(tmp_path: Path) -> None:
    name = MediaStore(tmp_path).add(_image_spec(1))
    with (tmp_path / "media" / "index.jsonl").open("a") as index:
        index.write('{"name": "abc.png", "spec": {"kind": "ima')
    restarted = MediaStore(tmp_path)
    assert restarted.known(name) and not restarted.known("abc.png")


# ------------------------------------------------------------------------------ samples and previews


def _check_length(expected: float) -> Callable[[bytes, str], None]:
    def check(data: bytes, ext: str) -> None:
        measured = measure_seconds(data, ext)
        assert measured is not None and abs(measured - expected) < (0.25 if ext == "mp4" else 0.1)

    return check


def _check_image(fmt: str, size: tuple[int, int] | None = None) -> Callable[[bytes, str], None]:
    def check(data: bytes, ext: str) -> None:
        image = Image.open(io.BytesIO(data))
        assert image.format == fmt
        assert size is None or image.size == size

    return check


def _check_unreadable(data: bytes, ext: str) -> None:
    assert measure_seconds(data, ext) is None


SAMPLE_CHECKS: dict[str, Callable[[bytes, str], None]] = {
    "face.png": _check_image("PNG", (512, 512)),
    "voice.wav": _check_length(8.0),
    "voice.mp3": _check_length(8.0),
    "short-voice.wav": _check_length(3.0),
    "clip.mp4": _check_length(24.0),
    "long.mp4": _check_length(150.0),
    "broken.mp4": _check_unreadable,
    "music.mp3": _check_length(20.0),
    "photo.jpg": _check_image("JPEG"),
}


def test_every_sample_is_checked() -> None:
    assert set(SAMPLES) == set(SAMPLE_CHECKS)


@pytest.mark.parametrize("name", sorted(SAMPLE_CHECKS))
def test_samples_are_readable_without_registration(name: str) -> None:
    store = MediaStore()
    assert store.known(name)
    found = asyncio.run(store.read(name))
    assert found is not None
    data, content_type = found
    ext = name.rsplit(".", 1)[1]
    assert content_type == CONTENT_TYPES[ext]
    SAMPLE_CHECKS[name](data, ext)


def test_clip_sample_is_portrait_with_audio() -> None:
    data = MediaStore().read_sync("clip.mp4")
    assert data is not None
    info = _video_info(data[0])
    assert info["codec"] == "h264" and info["audio"] == ["aac"]
    assert info["size"] == (180, 320)


def test_previews_are_cards_with_the_model_id() -> None:
    store = MediaStore()
    assert store.known("preview-gpt-image-2.png")
    assert not store.known("preview-gpt-image-2.jpg") and not store.known("preview-a/b.png")
    found = store.read_sync("preview-gpt-image-2.png")
    assert found is not None and found[1] == "image/png"
    assert Image.open(io.BytesIO(found[0])).size == (320, 180)
    assert MediaStore().read_sync("preview-gpt-image-2.png") == found
    other = store.read_sync("preview-zonos2.png")
    assert other is not None and other[0] != found[0]


PYAV_CHILD = """
import sys
from array import array
import mediagen_nb.sandbox.server
from mediagen_nb.sandbox.media import encoding
print("av" in sys.modules)
encoding.mp3_bytes(array("h", [0] * 1600))
print("av" in sys.modules)
"""


def test_pyav_loads_with_the_first_mp3_or_mp4_not_with_the_server() -> None:
    """A sandbox that serves only images (most kept sandboxes of the CLI) never pays PyAV's import."""
    assert fresh_python(PYAV_CHILD).split() == ["False", "True"]
