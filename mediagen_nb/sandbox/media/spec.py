"""What a media file is: a ``MediaSpec``, whose equal instances render identical bytes, and the formats."""

import hashlib
import math
import random
from dataclasses import dataclass

MAX_SIDE = 4096  # largest image or video side a spec may ask for

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


def seeded(*parts: object) -> random.Random:
    """A generator seeded from a stable hash of ``parts``, identical across processes."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
