"""Real media files for the sandbox, by medium: drawn images, synthesized speech and music, H.264 video.

* ``spec.py``: ``MediaSpec``, what one file is; equal specs render identical bytes.
* ``images.py``, ``speech.py``, ``music.py``, ``video.py``: drawing and synthesis, one medium each.
* ``encoding.py``: WAV, MP3 and MP4 encoders; ``rendering.py``: a spec to bytes; ``measure.py``: a
  file's length as the service meters it; ``samples.py``: the sample inputs.
* ``store.py``: ``MediaStore``, files rendered on first read and cached in memory and on disk.
"""

from mediagen_nb.sandbox.media.images import render_image, render_preview
from mediagen_nb.sandbox.media.measure import measure_seconds
from mediagen_nb.sandbox.media.rendering import render, render_audio, render_music
from mediagen_nb.sandbox.media.samples import SAMPLES
from mediagen_nb.sandbox.media.spec import CONTENT_TYPES, MediaSpec
from mediagen_nb.sandbox.media.store import MediaStore
from mediagen_nb.sandbox.media.video import render_video

__all__ = [
    "CONTENT_TYPES",
    "SAMPLES",
    "MediaSpec",
    "MediaStore",
    "measure_seconds",
    "render",
    "render_audio",
    "render_image",
    "render_music",
    "render_preview",
    "render_video",
]
