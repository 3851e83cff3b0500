"""Real-browser test: JupyterLab + Debian's Chromium run the notebooks as a person would.

``01-quickstart`` is opened and run (Run All), then the page is checked: every output image has
loaded (natural width > 0), audio and video elements have a playable source, the ``mg.form`` widget
renders and a click on its Run button submits it (its result image loads), and no traceback shows.
``02-bulk-prompt-sweep`` is run too and its gallery is screenshotted, and ``07-comparing-models``,
whose rows x models grid must load in every cell; with
``MEDIAGEN_UPDATE_SCREENSHOT=1`` that screenshot also refreshes ``docs/images/sweep-gallery.png``
(the README's picture). Screenshots of every step go to ``test-artifacts/`` (git-ignored).
"""

import io
import json
import os
import re
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'")
from _harness import (
    H264,
    NOTEBOOKS,
    OUTPUT,
    VIEWPORT,
    Lab,
    Shots,
    assert_image_loads,
    assert_no_traceback,
    audio_type,
    check_media,
    failure_screenshot,
    loopback_page,
    not_of,
    notebooks_closed_after,
    notebooks_lab,
    open_notebook,
    reveal,
    run_all,
)
from playwright.sync_api import Locator, Page, expect

from mediagen_nb.sandbox import kept


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, artifacts: Path, chromium: str) -> Iterator[Lab]:
    """JupyterLab on a free 127.0.0.1 port serving a stripped copy of ``notebooks/``; stopped after."""
    with notebooks_lab(tmp_path_factory.mktemp("lab-home"), artifacts / "jupyter-server.log") as made:
        yield made


@pytest.fixture(scope="module")
def lab_page(lab: Lab, browser: Any, artifacts: Path) -> Iterator[Page]:
    """One JupyterLab page for the module's notebooks: each test opens its notebook in it as a person
    opens the next one (a load of JupyterLab costs Chromium about 8 CPU-s, opening a notebook in it 1)."""
    with loopback_page(browser, artifacts) as made:
        yield made


@pytest.fixture
def page(lab_page: Page) -> Iterator[Page]:
    """The module's JupyterLab page at the usual size; the test's notebooks closed (kernels shut down)
    after it, so each test sees only its own notebook's outputs."""
    lab_page.set_viewport_size(VIEWPORT)
    with notebooks_closed_after(lab_page) as made:
        yield made


QUICKSTART = "01-quickstart.ipynb"
SWEEP = "02-bulk-prompt-sweep.ipynb"
COMPARE = "07-comparing-models.ipynb"
COMPARED = (4, 3)  # its comparison: 4 rows x 3 models
README_SCREENSHOT = NOTEBOOKS.parent / "docs" / "images" / "sweep-gallery.png"  # the README's and the site's
README_SCREENSHOT_MAX_BYTES = 300_000
GALLERY_VIEWPORT = {"width": 1280, "height": 1200}
FORM_TIMEOUT_MS = 90_000
FORM_PROMPT = "a lighthouse at dawn, watercolor"
RUN_BUTTON = "button.jupyter-button"
RUN_TEXT = re.compile(r"^\s*Run\s*$")


def test_quickstart_runs_in_the_browser(lab: Lab, page: Page, artifacts: Path) -> None:
    """01-quickstart: Run All, then the image loads, audio and video play, and the form submits."""
    shots = Shots(page, artifacts, "quickstart")
    report: dict[str, Any] = {}
    with failure_screenshot(shots):
        panel = open_notebook(page, lab, QUICKSTART)
        shots.take("opened")
        started = time.monotonic()
        run_all(page, QUICKSTART, panel)
        report["run_all_s"] = round(time.monotonic() - started, 1)
        shots.take("ran")
        assert_no_traceback(page)

        images = page.locator(f"{OUTPUT} img")
        assert images.count() >= 1, "no image in the outputs"
        report["image_widths"] = [assert_image_loads(images.nth(i)) for i in range(images.count())]
        reveal(images.first)
        shots.take("image")

        audios = page.locator(f"{OUTPUT} audio")
        assert audios.count() >= 1, "no audio element in the outputs"
        report["audio"] = []
        for i in range(audios.count()):
            src = audios.nth(i).get_attribute("src") or ""
            report["audio"].append(check_media(audios.nth(i), audio_type(src)))
        assert all(a["canPlayType"] for a in report["audio"]), f"audio is not playable: {report['audio']}"
        shots.take("audio")

        videos = page.locator(f"{OUTPUT} video")
        assert videos.count() >= 1, "no video element in the outputs"
        report["video"] = [check_media(videos.nth(i), H264) for i in range(videos.count())]
        shots.take("video")
        if not report["video"][0]["canPlayType"]:
            warnings.warn(
                f"this Chromium cannot play H.264 ({H264}): the <video> sources were checked as served "
                "(200, video/mp4) but not played",
                stacklevel=1,
            )

        report["form"] = submit_form(page, shots)
        assert_no_traceback(page)
    (artifacts / "quickstart-report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps(report, indent=2))


def submit_form(page: Page, shots: Shots) -> dict[str, Any]:
    """Find the ``mg.form`` widget by its Run button, click it, wait for the new result to load."""
    form = page.locator(OUTPUT).filter(has=page.locator(RUN_BUTTON, has_text=RUN_TEXT)).last
    run = form.locator(RUN_BUTTON, has_text=RUN_TEXT)
    run.wait_for(state="attached", timeout=FORM_TIMEOUT_MS)  # the widget has rendered
    reveal(run)
    expect(run).to_be_visible()
    if run.is_disabled():  # a form shown empty: type a prompt into its first text input, as a person would
        prompt = form.locator("textarea, input[type=text]").first
        assert not prompt.input_value(), "the form's Run button is disabled with its first input filled"
        prompt.fill(FORM_PROMPT)
        expect(run).to_be_enabled(timeout=10_000)
    history = form.get_by_text(re.compile(r"^history \(\d+\)$"))
    before = int(re.findall(r"\d+", history.inner_text())[0])
    shots.take("form")
    run.click()
    expect(history).to_have_text(f"history ({before + 1})", timeout=FORM_TIMEOUT_MS)
    status = form.locator(".widget-html").filter(has_text=re.compile("succeeded|failed|✗|✓"))
    expect(status.first).to_contain_text("✓", timeout=10_000)
    image = form.locator("img").first
    width = assert_image_loads(image)
    shots.take("form-result")
    return {"history_before": before, "status": status.first.inner_text(), "result_width": width}


def test_sweep_gallery_screenshot(lab: Lab, page: Page, artifacts: Path) -> None:
    """02-bulk-prompt-sweep: Run All, then the preview gallery's images load; screenshot it."""
    shots = Shots(page, artifacts, "sweep")
    page.set_viewport_size(GALLERY_VIEWPORT)  # a taller page: several rows of the gallery in one picture
    with failure_screenshot(shots):
        panel = open_notebook(page, lab, SWEEP)
        run_all(page, SWEEP, panel)
        assert_no_traceback(page)
        gallery = page.locator(OUTPUT).filter(has=page.locator('div[style*="grid"] img')).last
        expect(gallery).to_be_attached(timeout=10_000)
        images = gallery.locator("img")
        assert images.count() >= 2, f"the gallery shows {images.count()} images"
        gallery.evaluate("el => (el.closest('.jp-Cell') || el).scrollIntoView({block: 'start'})")
        gallery.evaluate(
            "el => { const top = el.getBoundingClientRect().top;"
            " if (top > 300) el.scrollIntoView({block: 'start'}); }"
        )
        page.wait_for_timeout(300)
        visible = [image for image in images.all() if image.is_visible() and _in_viewport(image)]
        assert visible, "no gallery image is in view"
        widths = [assert_image_loads(image) for image in visible]
        assert all(widths)
        gallery.evaluate(
            "el => { const top = el.getBoundingClientRect().top;"
            " if (top < 140) { const s = el.closest('.jp-WindowedPanel-outer, .jp-Notebook');"
            " if (s) s.scrollBy(0, top - 140); } }"
        )
        page.wait_for_timeout(300)
        shot = shots.take("gallery")
    if os.environ.get("MEDIAGEN_UPDATE_SCREENSHOT") == "1":
        README_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        README_SCREENSHOT.write_bytes(_small_png(shot.read_bytes()))


def test_the_comparison_notebook_loads_every_cell_of_its_grid(lab: Lab, page: Page, artifacts: Path) -> None:
    """07-comparing-models: Run All, then its rows x models grid has a loaded image in every cell, each
    row headed by its inputs, each column by its model (the JupyterLab of this module, not a new one)."""
    shots = Shots(page, artifacts, "compare")
    page.set_viewport_size(GALLERY_VIEWPORT)
    with failure_screenshot(shots):
        panel = open_notebook(page, lab, COMPARE)
        run_all(page, COMPARE, panel)
        assert_no_traceback(page)
        grid = page.locator(f"{OUTPUT} table").filter(has=page.locator("th", has_text="row \\ model")).first
        expect(grid).to_be_attached(timeout=10_000)
        rows, models = COMPARED
        expect(grid.locator("tr")).to_have_count(rows + 1)  # a header, then a row per input row
        expect(grid.locator("tr").first.locator("th")).to_have_count(models + 1)
        cells = grid.locator("td")
        expect(cells).to_have_count(rows * models)
        widths = []
        for cell in cells.all():
            image = cell.locator("img")
            expect(image).to_have_count(1)
            widths.append(assert_image_loads(image))
            expect(cell).to_contain_text("succeeded")
        assert len(widths) == rows * models and all(widths)
        reveal(grid)
        shots.take("grid")


def _in_viewport(element: Locator) -> bool:
    box = element.bounding_box()
    height = (element.page.viewport_size or VIEWPORT)["height"]
    return box is not None and 0 <= box["y"] < height - 40


def _small_png(data: bytes) -> bytes:
    """The screenshot as a commit-sized PNG: quantized to a palette when it is over the limit."""
    if len(data) <= README_SCREENSHOT_MAX_BYTES:
        return data
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        out = io.BytesIO()
        image.convert("RGB").quantize(colors=256).save(out, format="PNG", optimize=True)
    return out.getvalue()


def test_a_cli_gallery_shows_every_image_after_the_command_exited(browser: Any, tmp_path: Path) -> None:
    """``mediagen sweep --gallery`` on the embedded sandbox: the page is opened once the command is gone
    and its sandbox stopped, from another folder, and every image still loads."""
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    (work / "sheet.csv").write_text("prompt\na paper boat\na glass owl\na brass key\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDIAGEN_")}
    env["MEDIAGEN_LEDGER"] = str(tmp_path / "ledger.sqlite")
    command = [sys.executable, "-c", "from mediagen_nb.cli import main; raise SystemExit(main())"]
    done = subprocess.run(
        [*command, "sweep", "sheet.csv", "--model=flare-1-swift", "--gallery=site/gallery.html"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert kept.stop() is not None, "the command used the kept sandbox (of this test's data folder)"
    page_file = work / "site" / "gallery.html"
    context = browser.new_context(viewport=VIEWPORT)
    before = Path.cwd()
    try:
        page = context.new_page()
        os.chdir(elsewhere)  # the page's links are relative to the page, not to where it is opened from
        page.goto(page_file.as_uri())
        images = page.locator("img")
        expect(images).to_have_count(3)
        for image in images.all():
            image.scroll_into_view_if_needed()
            page.wait_for_function("img => img.complete", arg=image.element_handle(), timeout=10_000)
            assert image.evaluate("img => img.naturalWidth") > 0, image.get_attribute("src")
    finally:
        os.chdir(before)
        context.close()


def test_a_saved_notebook_shows_inline_previews_with_the_sandbox_stopped(
    browser: Any, served: Any, tmp_path: Path
) -> None:
    """``MEDIAGEN_PREVIEW=inline``: the outputs carry the pictures, so the saved notebook (here as
    nbconvert's page) shows them after the sandbox that made them is gone."""
    import nbformat
    import pandas as pd

    import mediagen_nb  # noqa: F401  (registers df.mediagen)
    from mediagen_nb.client import AsyncClient, previews

    client = AsyncClient(
        served.demo_key,
        base_url=served.base_url,
        time_scale=600,
        ledger=str(tmp_path / "l.db"),
    )
    rows = pd.DataFrame({"prompt": ["a saved fox", "a saved owl", "a saved moth"]})
    done = rows.mediagen.run("flare-1-swift", client=client, progress=False)
    previews.preview_mode("inline")
    try:
        shown = done.mediagen.preview()._repr_html_()
    finally:
        previews.preview_mode(None)
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("done.mediagen.preview()")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": shown})]
    notebook.cells = [cell]
    saved = tmp_path / "saved.ipynb"
    nbformat.write(notebook, saved)
    served.stop()  # the sandbox is gone
    converted = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", str(saved)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert converted.returncode == 0, converted.stderr[-2000:]
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.goto((tmp_path / "saved.html").as_uri())
        images = page.locator(".jp-OutputArea-output img")
        expect(images).to_have_count(3)
        for image in images.all():
            assert (image.get_attribute("src") or "").startswith("data:image/png;base64,")
            page.wait_for_function("img => img.complete", arg=image.element_handle(), timeout=10_000)
            assert image.evaluate("img => img.naturalWidth") > 0
    finally:
        context.close()


def test_previews_through_the_jupyter_server_when_only_it_is_reachable(
    browser: Any, lab: Lab, served: Any, tmp_path: Path
) -> None:
    """``MEDIAGEN_PREVIEW=proxy``: the browser reaches only JupyterLab's address; the sandbox's media
    come through the Jupyter server (jupyter-server-proxy), as on Binder or JupyterHub."""
    pytest.importorskip("jupyter_server_proxy", reason="jupyter-server-proxy is not installed")
    import pandas as pd

    import mediagen_nb  # noqa: F401  (registers df.mediagen)
    from mediagen_nb.client import AsyncClient, previews

    client = AsyncClient(
        served.demo_key,
        base_url=served.base_url,
        time_scale=600,
        ledger=str(tmp_path / "l.db"),
    )
    done = pd.DataFrame({"prompt": ["a proxied fox", "a proxied owl"]}).mediagen.run(
        "flare-1-swift", client=client, progress=False
    )
    previews.preview_mode("proxy")
    try:
        shown = done.mediagen.preview()._repr_html_()
    finally:
        previews.preview_mode(None)
    sandbox_port = urlsplit(str(served.base_url)).port
    assert f'src="/proxy/{sandbox_port}/' in shown
    (lab.root / "proxied.html").write_text(f"<!doctype html><html><body>{shown}</body></html>")
    lab_port = urlsplit(lab.url).port
    # Signed in to the Jupyter server (as a JupyterLab session is): every request carries its token.
    context = browser.new_context(
        viewport=VIEWPORT, extra_http_headers={"Authorization": f"token {lab.token}"}
    )
    blocked: list[str] = []

    def only_the_jupyter_server(route: Any) -> None:
        if urlsplit(route.request.url).port == lab_port:
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context.route(not_of(lab.url), only_the_jupyter_server)
    try:
        page = context.new_page()
        page.goto(f"{lab.url}/files/proxied.html")
        images = page.locator("img")
        expect(images).to_have_count(2)
        for image in images.all():
            page.wait_for_function("img => img.complete", arg=image.element_handle(), timeout=15_000)
            assert image.evaluate("img => img.naturalWidth") > 0, image.get_attribute("src")
        assert not blocked  # nothing needed the sandbox's own address
    finally:
        context.close()
