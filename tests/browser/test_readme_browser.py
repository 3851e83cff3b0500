"""Real-browser tests of issue 20: the README's tour as written, and every video on a Binder-like server.

1. JupyterLab is started the README's way, ``jupyter lab notebooks/`` from the repository's root (a
   stripped copy of it), so a new notebook's kernel starts in ``notebooks/``. A notebook holding the
   README's tour, exactly as written, is run there, and the gallery's images load.
2. Binder: a sandbox served beside JupyterLab with ``binder/start``'s settings (its key, clock and
   ``MEDIAGEN_PREVIEW=proxy``), and a browser that may reach nothing but the Jupyter server. Notebooks 04
   and 05 are run; every ``<video>`` of their outputs loads through the Jupyter server and plays
   (metadata read, a duration, no media error). Three of their seven videos did not before.

Both use the harness of ``_harness.py`` (Debian's chromium, never ``playwright
install``); screenshots go to ``test-artifacts/``.
"""

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import nbformat
import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'")
from _harness import (
    FETCH_JS,
    H264,
    OUTPUT,
    VIEWPORT,
    Lab,
    Shots,
    assert_image_loads,
    assert_no_traceback,
    check_media,
    close_notebook,
    failure_screenshot,
    not_of,
    notebooks_lab,
    open_notebook,
    reveal,
    run_all,
    server_env,
)

from mediagen_nb.sandbox import Sandbox, SandboxConfig

REPO = Path(__file__).resolve().parents[2]
TOUR = "tour.ipynb"
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}
LINKS = f'{OUTPUT} a[href*="/_sandbox/"]'  # links to the sandbox's pages and files
BINDER_NOTEBOOKS = {"04-replicate-a-short.ipynb": 3, "05-topic-to-video.ipynb": 5}  # videos in each


def readme_tour() -> str:
    """The code block under "## A 30-second tour", exactly as the README shows it."""
    section = (REPO / "README.md").read_text(encoding="utf-8").split("## A 30-second tour", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def binder_settings(base_url: str) -> dict[str, str]:
    """The ``export NAME=VALUE`` lines of ``binder/start``, for a sandbox at ``base_url``."""
    exports = dict(re.findall(r"^export (\w+)=(\S+)", (REPO / "binder" / "start").read_text(), re.M))
    settings = {name: value.strip('"') for name, value in exports.items()}
    binder_url = settings["MEDIAGEN_BASE_URL"]
    return {
        name: value.replace("$MEDIAGEN_BASE_URL", binder_url).replace(binder_url, base_url)
        for name, value in settings.items()
    }


def test_the_readme_tour_runs_as_written_in_jupyterlab_opened_the_readme_way(
    browser: Any, artifacts: Path, tmp_path: Path
) -> None:
    with notebooks_lab(tmp_path, artifacts / "jupyter-server-tour.log") as lab:
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(readme_tour())]  # as a user pastes it into a new notebook
        notebook.metadata["kernelspec"] = KERNEL
        nbformat.write(notebook, lab.root / TOUR)
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        shots = Shots(page, artifacts, "readme-tour")
        try:
            with failure_screenshot(shots):
                panel = open_notebook(page, lab, TOUR)
                run_all(page, TOUR, panel)
                assert_no_traceback(page)
                gallery = page.locator(OUTPUT).filter(has=page.locator('div[style*="grid"] img')).last
                images = gallery.locator("img")
                assert images.count() == 12, f"the gallery shows {images.count()} of the tour's 12 images"
                widths = [assert_image_loads(images.nth(i)) for i in range(images.count())]
                assert all(widths)
                shots.take("gallery")
        finally:
            context.close()


# Binder's clock runs at x30 (binder/start) so a visitor sees jobs move; the proxy path under test does
# not depend on it, so the sandbox and the kernels here both run at x600 (a video job: seconds, not 30).
FAST = "600"


@pytest.fixture
def binder_sandbox() -> Iterator[Sandbox]:
    """The sandbox ``binder/start`` serves beside Jupyter, here on a free port and a faster clock."""
    with Sandbox(SandboxConfig(time_scale=float(FAST), seed=20)) as sandbox:
        yield sandbox


def test_every_video_of_notebooks_04_and_05_plays_through_the_jupyter_server(
    browser: Any, artifacts: Path, tmp_path: Path, binder_sandbox: Sandbox
) -> None:
    pytest.importorskip("jupyter_server_proxy", reason="jupyter-server-proxy is not installed")
    assert binder_sandbox.base_url is not None
    env = {**server_env(tmp_path), **binder_settings(binder_sandbox.base_url)}
    assert env["MEDIAGEN_PREVIEW"] == "proxy"
    env["MEDIAGEN_TIME_SCALE"] = FAST  # the sandbox's clock, which the clients pace themselves to
    env["MEDIAGEN_LEDGER"] = str(tmp_path / "ledger.sqlite")
    with notebooks_lab(tmp_path, artifacts / "jupyter-server-binder.log", env) as lab:
        lab_port = urlsplit(lab.url).port
        context = browser.new_context(viewport=VIEWPORT)
        blocked: list[str] = []

        def only_the_jupyter_server(route: Any) -> None:  # Binder: the container's 127.0.0.1 is not ours
            if urlsplit(route.request.url).port == lab_port:
                route.continue_()
            else:
                blocked.append(route.request.url)
                route.abort()

        context.route(not_of(lab.url), only_the_jupyter_server)
        report: dict[str, Any] = {}
        try:
            page = context.new_page()  # one JupyterLab for both: a visitor opens one notebook, then the next
            for name, expected in BINDER_NOTEBOOKS.items():
                shots = Shots(page, artifacts, f"binder-{name[:2]}")
                with failure_screenshot(shots):
                    panel = open_notebook(page, lab, name)
                    run_all(page, name, panel)
                    assert_no_traceback(page)
                    videos = page.locator(f"{OUTPUT} video")
                    assert videos.count() == expected, f"{name} shows {videos.count()} videos"
                    report[name] = [played(videos.nth(i), lab) for i in range(videos.count())]
                    report[f"{name} links"] = [followed(page, a, lab) for a in page.locator(LINKS).all()]
                    shots.take("videos")
                close_notebook(page, name)  # its outputs leave the page: the next one's are counted alone
        finally:
            context.close()
        (artifacts / "binder-videos-report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
        sandbox_port = urlsplit(binder_sandbox.base_url).port
        assert not [url for url in blocked if urlsplit(url).port == sandbox_port], blocked


def followed(page: Any, link: Any, lab: Lab) -> dict[str, Any]:
    """A link to a sandbox page or file (a share link, a history row): it too answers through the proxy."""
    href = link.evaluate("a => a.href")
    assert href.startswith(f"{lab.url}/proxy/"), f"a link leads to {href}, not through the Jupyter server"
    fetched: dict[str, Any] = page.evaluate(FETCH_JS, href)
    assert fetched["status"] == 200, (href, fetched)
    return {"href": href, **fetched}


def played(video: Any, lab: Lab) -> dict[str, Any]:
    """One ``<video>``: loaded from the Jupyter server (its proxy), metadata read, a duration, no error."""
    reveal(video)
    source = video.evaluate("el => el.currentSrc || el.src")
    assert source.startswith(f"{lab.url}/proxy/"), (
        f"a video loads from {source}, not through the Jupyter server"
    )
    report = check_media(video, H264)
    assert report["canPlayType"], f"this Chromium cannot play H.264 ({H264})"
    assert report["readyState"] >= 1 and report["duration"] > 0, report
    return report
