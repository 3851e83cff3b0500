"""``df.mediagen.preview()`` (escaped HTML with inline media) and ``df.mediagen.download()``."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
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
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; a cat" in page  # the caption
    for url in out["output_url"]:
        assert f'<img src="{url}" loading="lazy"' in page
    assert "javascript:" not in page  # an unsafe URL is not rendered at all
    assert page.count("border-radius:6px") == 2  # one card a row, in a grid
    assert "succeeded · 1 credit" in page and "1 credits" not in page  # each card: status and credits
    assert repr(gallery).startswith("<Gallery of 2 rows")
    players = out.mediagen.preview(media="voice_output_url")._repr_html_()
    assert f'<audio src="{service.sample("voice.wav")}" controls' in players
    clips = out.mediagen.preview(media="clip_output_url")._repr_html_()
    assert f'<video src="{service.sample("clip.mp4")}" controls' in clips and "javascript:" not in clips


def test_preview_captions_what_varied_and_pages(service: Service, tmp_path: Path) -> None:
    out = run_images(service, tmp_path, [f"tile {i}" for i in range(5)])
    out["style"] = "flat"  # the same in every row: not worth a caption
    page = out.mediagen.preview(per_page=2, width=100)._repr_html_()
    assert page.count("<img ") == 2 and "minmax(100px" in page
    assert "showing 1-2 of 5 (page 1 of 3; preview(page=N) for another)" in page
    assert "prompt: tile 0" in page and "style:" not in page and "generation_id" not in page
    last = out.mediagen.preview(per_page=2, page=3)._repr_html_()
    assert last.count("<img ") == 1 and "showing 5-5 of 5" in last
    document = Gallery(out, per_page=1).to_html_page("a <b> title")
    assert document.startswith("<!doctype html>") and "a &lt;b&gt; title" in document
    with pytest.raises(ValueError, match="rows='subject' is no column; use one of prompt"):
        out.mediagen.preview(rows="subject")


def test_preview_as_a_facet_grid(service: Service, tmp_path: Path) -> None:
    grid = pd.DataFrame(
        {"subject": ["a fox", "a fox", "an owl", "an owl"], "quality": ["low", "high", "low", "high"]}
    )
    grid["prompt"] = grid["subject"] + ", " + grid["quality"]
    out = grid.mediagen.run(
        "flare-1-swift", client=service.client, ledger=tmp_path / "l.sqlite", progress=False
    )
    page = out.mediagen.preview(rows="subject", cols="quality")._repr_html_()
    assert page.count("<tr>") == 3 and page.count("<img ") == 4  # a header row, one row per subject
    assert page.index(">low</th>") < page.index(">high</th>")  # columns in the frame's order
    assert page.index(">a fox</th>") < page.index(">an owl</th>")


def test_download_saves_files_concurrently_and_adds_local_path(
    service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service.faults(modelScript=["ok", "fail"])  # one row fails: it has nothing to download
    out = run_images(service, tmp_path, [f"poster {i}" for i in range(10)])
    assert sorted(out["status"]) == ["failed"] + ["succeeded"] * 9
    lost = int(out.index[out["status"] == "failed"][0])
    in_flight = {"now": 0, "most": 0}
    original, counting, overlapped = httpx.Client.send, threading.Lock(), threading.Event()

    def counted(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        with counting:
            in_flight["now"] += 1
            in_flight["most"] = max(in_flight["most"], in_flight["now"])
            if in_flight["now"] > 1:
                overlapped.set()
        try:
            overlapped.wait(5)  # hold the slot until another download is in flight too (one at a time: never)
            return original(self, request, **kwargs)
        finally:
            with counting:
                in_flight["now"] -= 1

    monkeypatch.setattr(httpx.Client, "send", counted)  # httpx's, under every download
    folder = tmp_path / "media"
    saved = out.mediagen.download(folder, progress=False)
    assert in_flight["most"] > 1  # several files at once
    assert list(saved.columns) == [*out.columns, "local_path", "download_error"]
    paths = saved["local_path"].tolist()
    assert pd.isna(paths[lost])
    files = [Path(p) for i, p in enumerate(paths) if i != lost]
    assert len(set(files)) == 9 and all(f.parent == folder and f.suffix == ".png" for f in files)
    card = json.loads(files[0].with_name(files[0].name + ".json").read_text())  # what made it
    first = saved.iloc[paths.index(str(files[0]))]
    assert card["model"] == "flare-1-swift" and card["generation_id"] == first["generation_id"]
    assert card["input"] == {"prompt": first["prompt"]} and card["credits"] == 1
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


def test_download_names_files_from_columns_and_keeps_going_past_a_failed_url(
    service: Service, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_images(service, tmp_path, ["a red mug", "a blue lamp", "a red lamp"])
    out["colour"] = ["red", "blue", "red"]
    out.loc[1, "output_url"] = service.base_url + "/_sandbox/media/gone.png"  # a URL that fails
    with pytest.raises(ValueError, match=r"name='\{shade\}-\{row\}' uses 'shade', which is no column"):
        out.mediagen.download(tmp_path / "named", name="{shade}-{row}", progress=False)
    assert not (tmp_path / "named").exists()  # refused before anything was downloaded
    saved = out.mediagen.download(tmp_path / "named", name="{colour}/{row}", progress=False)
    names = [Path(p).name if isinstance(p, str) else None for p in saved["local_path"]]
    assert names == ["red-0.png", None, "red-2.png"]  # the slash is no folder: names are sanitized
    assert "404" in saved["download_error"][1] and saved["download_error"].isna().sum() == 2
    assert "1 of 3 files could not be downloaded" in capsys.readouterr().err


def test_download_names_stay_the_same_from_a_restarted_sandbox(service: Service, tmp_path: Path) -> None:
    """Names come from the row and what it asked, not the output's host and port."""
    out = run_images(service, tmp_path, ["a kite", "a boat"])
    first = out.mediagen.download(tmp_path / "a", progress=False)
    moved = out.assign(output_url=[u.replace("127.0.0.1", "localhost") for u in out["output_url"]])
    second = moved.mediagen.download(tmp_path / "b", progress=False)
    assert [Path(p).name for p in first["local_path"]] == [Path(p).name for p in second["local_path"]]


def test_a_generation_saves_its_output(service: Service, tmp_path: Path) -> None:
    out = run_images(service, tmp_path, ["a single teapot"])
    from mediagen_nb.client import DownloadFailed, Generation, GenerationFailed, MediagenError

    generation = Generation.from_api(
        {
            "id": out["generation_id"][0],
            "modelId": "flare-1-swift",
            "status": "succeeded",
            "output": {"type": "image", "urls": [out["output_url"][0]]},
            "creditsSpent": int(out["credits"][0]),
        }
    )
    data = generation.bytes()
    assert data.startswith(b"\x89PNG")
    saved = generation.save(tmp_path / "teapot")  # the extension comes from the output
    assert saved == tmp_path / "teapot.png" and saved.read_bytes() == data
    assert generation.save(tmp_path / "copy.png").read_bytes() == data
    gone = replace(generation, output={"type": "image", "urls": [out["output_url"][0] + "x"]})
    with pytest.raises(DownloadFailed, match=r"cannot save .*: it answered 404"):
        gone.save(tmp_path / "gone.png")
    assert sorted(p.name for p in tmp_path.glob("gone*")) == []  # no half file, no .part left
    running = replace(generation, status="processing", output=None)
    with pytest.raises(MediagenError, match=r"no output yet .*wait\(\) for it first"):
        running.save(tmp_path / "later")
    with pytest.raises(GenerationFailed, match="the model broke"):
        replace(generation, status="failed", output=None, error="the model broke").bytes()


def test_captions_leave_out_a_runs_own_columns(service: Service, tmp_path: Path) -> None:
    out = run_images(service, tmp_path, ["a green cup", "a grey cup"])
    saved = out.mediagen.download(tmp_path / "media", progress=False)
    page = saved.mediagen.preview()._repr_html_()
    assert "prompt: a green cup" in page
    for own in ("local_path", "download_error", "generation_id", "elapsed_s", "input", "status"):
        assert f"{own}: " not in page  # a run's own columns are no caption (status is on its own line)
