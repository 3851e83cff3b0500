"""``df.mediagen.preview()`` (escaped HTML with inline media) and ``df.mediagen.download()``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pandas as pd
import pytest

from mediagen_nb.batch import Gallery

if TYPE_CHECKING:
    from conftest import Service

SCRIPT = "<script>alert('x')</script> & a cat"


def run_images(service: Service, tmp_path: Path, prompts: list[str], **options: Any) -> pd.DataFrame:
    df = pd.DataFrame({"prompt": prompts})
    return df.mediagen.run(
        "flare-1-swift", client=service.client, ledger=tmp_path / "l.sqlite", progress=False, **options
    )


def test_preview_escapes_text_and_shows_images_audio_and_video(service: Service, tmp_path: Path) -> None:
    out = run_images(service, tmp_path, [SCRIPT, "a dog"])
    out["voice_output_url"] = [service.sample("voice.wav"), None]
    out["clip_output_url"] = [service.sample("clip.mp4"), "javascript:alert(1)//x.mp4"]
    gallery = out.mediagen.preview()
    assert isinstance(gallery, Gallery)
    page = gallery._repr_html_()
    assert "<script>" not in page and "alert('x')" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; a cat" in page
    for url in out["output_url"]:
        assert f'<img src="{url}" loading="lazy"' in page
    assert f'<audio src="{service.sample("voice.wav")}" controls' in page
    assert f'<video src="{service.sample("clip.mp4")}" controls' in page
    assert "javascript:" not in page  # an unsafe URL is not rendered at all
    assert page.count("<tr>") == 3  # a header and two rows
    assert "<th" in page and "output_urls" not in page  # the list column is left out by default
    assert repr(gallery).startswith("<Gallery of 2 rows")


def test_preview_columns_and_limit(service: Service, tmp_path: Path) -> None:
    out = run_images(service, tmp_path, [f"tile {i}" for i in range(5)])
    page = out.mediagen.preview(["prompt", "output_url"], limit=2, width=100)._repr_html_()
    assert page.count("<img ") == 2 and "max-width:100px" in page
    assert "... 3 more rows (limit=2)" in page
    assert "generation_id" not in page
    document = Gallery(out, limit=1).to_html_page("a <b> title")
    assert document.startswith("<!doctype html>") and "a &lt;b&gt; title" in document


def test_download_saves_files_concurrently_and_adds_local_path(
    service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service.faults(modelScript=["ok", "fail"])  # one row fails: it has nothing to download
    out = run_images(service, tmp_path, [f"poster {i}" for i in range(10)])
    assert sorted(out["status"]) == ["failed"] + ["succeeded"] * 9
    lost = int(out.index[out["status"] == "failed"][0])
    in_flight = {"now": 0, "most": 0}
    original = httpx.AsyncClient.get

    async def counted(self: httpx.AsyncClient, url: Any, **kwargs: Any) -> httpx.Response:
        in_flight["now"] += 1
        in_flight["most"] = max(in_flight["most"], in_flight["now"])
        try:
            await asyncio.sleep(0.01)  # hold the slot a moment so overlapping downloads are seen
            return await original(self, url, **kwargs)
        finally:
            in_flight["now"] -= 1

    monkeypatch.setattr(httpx.AsyncClient, "get", counted)
    folder = tmp_path / "media"
    saved = out.mediagen.download(folder, progress=False)
    assert in_flight["most"] > 1  # several files at once
    assert list(saved.columns) == [*out.columns, "local_path"]
    paths = saved["local_path"].tolist()
    assert pd.isna(paths[lost])
    files = [Path(p) for i, p in enumerate(paths) if i != lost]
    assert len(set(files)) == 9 and all(f.parent == folder and f.suffix == ".png" for f in files)
    for url, local in zip(saved["output_url"], saved["local_path"], strict=True):
        if isinstance(url, str):
            assert Path(local).read_bytes() == httpx.get(url, timeout=30).content
    assert not list(folder.glob("*.part"))
    assert "local_path" not in out.columns  # the frame downloaded from is unchanged

    # a second download skips every file already there: it works with the sandbox gone
    stamps = {f: f.stat().st_mtime_ns for f in files}
    service.sandbox.stop()
    again = out.mediagen.download(folder, progress=False)
    assert again["local_path"].drop(index=lost).tolist() == saved["local_path"].drop(index=lost).tolist()
    assert {f: f.stat().st_mtime_ns for f in files} == stamps


def test_download_of_a_prefixed_column(service: Service, tmp_path: Path) -> None:
    out = run_images(service, tmp_path, ["a mug", "a lamp"], prefix="img_")
    saved = out.mediagen.download(tmp_path / "media", column="img_output_url", progress=False)
    assert saved["img_local_path"].notna().all()
    with pytest.raises(KeyError, match="output_url"):
        out.mediagen.download(tmp_path / "media", progress=False)
