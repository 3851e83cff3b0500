"""Real-browser tests of issue 23: a notebook's previews still show once it is saved, closed and reopened,
and where there is no widget manager at all.

A notebook with a ``%%generate`` image, a voice (audio), a video, a sweep's live preview (the gallery),
a form and the catalog browser is run in JupyterLab (Run All) on the embedded sandbox, saved with its
widgets' state (JupyterLab's "save widget state" setting on) and closed, its kernel shut down. Then:

1. **Saved and reopened**: it is opened in a fresh browser context (a new kernel, nothing run) and
   every image loads, every audio and video plays (or its source is served) with its download link,
   the form comes back from the saved widget state, and the static "what to do" lines are there.
2. **No widget manager**: ``jupyter nbconvert --to html`` of the same file, opened from disk in chromium
   with no network but loopback (so no CDN's widget manager): the same media load, the static lines
   show, and a media URL is only ever loaded as an image or media (no script, page or frame).

Both use the harness of ``_harness.py`` (Debian's chromium, never ``playwright install``).
"""

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import nbformat
import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'")
from _harness import (
    H264,
    OUTPUT,
    Lab,
    Shots,
    assert_image_loads,
    assert_no_traceback,
    audio_type,
    check_media,
    failure_screenshot,
    loopback_page,
    notebooks_lab,
    open_notebook,
    run_all,
    shutdown_kernels,
)
from _wait import wait_until
from playwright.sync_api import Locator, Page, expect

NAME = "saved-and-reopened.ipynb"
PROMPTS = [f"a paper lantern, take {i}" for i in range(4)]
CELLS = (
    "%load_ext mediagen_nb\nimport pandas as pd\nimport mediagen_nb as mg",
    "%%generate gpt-image-2 --quality low -o face\nA studio portrait, soft light",
    'voice_sample = f"{mg.current().base_url}/_sandbox/samples/voice.wav"',
    "%%generate zonos2 --audio {{voice_sample}} -o voice\nHello from a saved notebook.",
    "%generate infinitetalk --image {{face.url}} --audio {{voice.url}} --resolution 480p -o talk",
    f"handle = pd.DataFrame({{'prompt': {PROMPTS!r}}}).mediagen.submit('gpt-image-2', quality='low')\n"
    "handle.preview(live=True)",
    "done = handle.result()",
    'mg.form("gpt-image-2")',
    "mg.catalog()",
)
PORTRAIT, VOICE, TALK, SWEEP, FORM, CATALOG = 1, 3, 4, 5, 7, 8  # indexes of CELLS
CELL = ".jp-CodeCell"  # a code cell, in JupyterLab and in nbconvert's page alike
NO_FORM = "No form above?"  # the first words of a form's static line
NO_WIDGET_LINE = ".mediagen-no-widget"  # that line's words, hidden where the form shows
NO_CATALOG = "%mediagen models"  # in the catalog browser's static line
RUN_BUTTON = "button.jupyter-button"
SAVE_TIMEOUT_S = 30
SAVE_JS = """
async (id) => {
  const app = window.jupyterapp;
  app.shell.activateById(id);
  await app.commands.execute('docmanager:save');
}
"""
MEDIA_REQUESTS = {"image", "media"}  # what a page may ask a media URL for: never a script, page or frame
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, artifacts: Path, chromium: str) -> Iterator[Lab]:
    """JupyterLab on a stripped clone, saving widget state; its kernels' kept sandbox serves the media."""
    home = tmp_path_factory.mktemp("saved-home")
    with notebooks_lab(home, artifacts / "jupyter-server-saved.log", save_widget_state=True) as made:
        yield made


@pytest.fixture(scope="module")
def saved(lab: Lab, browser: Any, artifacts: Path) -> Path:
    """The notebook of ``CELLS`` run in JupyterLab, saved with its widgets' state, closed, kernel gone."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = lab.root / NAME
    nbformat.write(notebook, path)
    with loopback_page(browser, artifacts) as page:
        shots = Shots(page, artifacts, "saved-run")
        with failure_screenshot(shots):
            panel = open_notebook(page, lab, NAME)
            run_all(page, NAME, panel)
            assert_no_traceback(page)
            expect(outputs(page, SWEEP, "img")).to_have_count(len(PROMPTS))  # the live preview's last drawing
            # issue 39: under a form that shows, its line for front ends without widgets does not
            expect(outputs(page, FORM, RUN_BUTTON).first).to_be_visible()
            expect(outputs(page, FORM, NO_WIDGET_LINE)).to_be_hidden()
            page.evaluate(SAVE_JS, panel)
            wait_for_widget_state(path)
            shots.take("ran")
    shutdown_kernels(lab.url, lab.token)
    return path


def wait_for_widget_state(path: Path) -> None:
    """Wait (bounded) until the file on disk holds every output and the widgets' saved state."""

    def saved_state() -> Any:
        metadata = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        return metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state")

    wait_until(saved_state, SAVE_TIMEOUT_S, f"{path.name} saved with widget state")


def test_a_saved_notebook_reopened_shows_every_preview(
    lab: Lab, saved: Path, page: Page, artifacts: Path
) -> None:
    shots = Shots(page, artifacts, "saved-reopened")
    with failure_screenshot(shots):
        open_notebook(page, lab, NAME)  # a fresh page and kernel; nothing is run again
        # The form and the catalog's cards are drawn from the saved widget state (their images too).
        expect(outputs(page, FORM, RUN_BUTTON).first).to_be_attached()
        expect(outputs(page, CATALOG, "img").first).to_be_attached()
        report = previews_shown(page)
        shots.take("reopened")
    (artifacts / "saved-reopened-report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")


def test_an_exported_notebook_shows_every_preview_without_a_widget_manager(
    saved: Path, page: Page, artifacts: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "exported.html"
    converted = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", f"--output={exported}", str(saved)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert converted.returncode == 0, converted.stderr[-2000:]
    asked: list[tuple[str, str]] = []
    page.on("request", lambda request: asked.append((request.resource_type, request.url)))
    shots = Shots(page, artifacts, "saved-exported")
    with failure_screenshot(shots):
        page.goto(exported.as_uri())
        report = previews_shown(page)
        assert page.locator(RUN_BUTTON).count() == 0, "a widget rendered: the page has a widget manager"
        expect(outputs(page, FORM, NO_WIDGET_LINE)).to_be_visible()  # no form: the line says what to do
        shots.take("exported")
    media_origins = {urlsplit(src).netloc for src in report["sources"]} - {""}
    assert media_origins, "no media source is an http URL"
    from_media = {kind for kind, url in asked if urlsplit(url).netloc in media_origins}
    assert from_media and from_media <= MEDIA_REQUESTS, f"the media server was asked for {from_media}"
    (artifacts / "saved-exported-report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")


def outputs(page: Page, cell: int, what: str) -> Locator:
    """``what`` in the outputs of code cell ``cell`` of ``CELLS``."""
    return page.locator(CELL).nth(cell).locator(f"{OUTPUT} {what}")


def previews_shown(page: Page) -> dict[str, Any]:
    """Every preview of ``CELLS`` in the page: images loaded, audio and video playing (or served) with a
    download link beside, the form's and the catalog's static lines. Works in JupyterLab and in an
    nbconvert page alike; any image a widget shows (the catalog's cards) must load too."""
    expect(page.locator(CELL)).to_have_count(len(CELLS), timeout=30_000)
    expect(outputs(page, PORTRAIT, "img")).to_have_count(1)
    expect(outputs(page, SWEEP, "img")).to_have_count(len(PROMPTS))
    images = page.locator(f"{OUTPUT} img").all()
    report: dict[str, Any] = {"image_widths": [assert_image_loads(image) for image in images]}
    audio = outputs(page, VOICE, "audio")
    expect(audio).to_have_count(1)
    report["audio"] = played(audio, audio_type(audio.get_attribute("src") or ""))
    video = outputs(page, TALK, "video")
    expect(video).to_have_count(1)
    report["video"] = played(video, H264)
    report["sources"] = [image.get_attribute("src") or "" for image in images] + [
        report["audio"]["src"],
        report["video"]["src"],
    ]
    expect(page.locator(CELL).nth(FORM).locator(OUTPUT).filter(has_text=NO_FORM)).to_have_count(1)
    expect(page.locator(CELL).nth(CATALOG).locator(OUTPUT).filter(has_text=NO_CATALOG)).to_have_count(1)
    return report


def played(media: Locator, mime: str) -> dict[str, Any]:
    """One ``<audio>``/``<video>``: it plays (or, without the codec, its source is served), and a
    download link to the same file sits beside it."""
    report = check_media(media, mime)
    if report["canPlayType"]:
        assert report["readyState"] >= 1, report
    link = media.locator("xpath=..").locator("a[download]")
    expect(link).to_have_count(1)
    assert link.get_attribute("href") == media.get_attribute("src"), "the download link is another file"
    return report
