"""Real-browser test: JupyterLab + Debian's Chromium run the notebooks as a person would.

``01-quickstart`` is opened and run (Run All), then the page is checked: every output image has
loaded (natural width > 0), audio and video elements have a playable source, the ``mg.form`` widget
renders and a click on its Run button submits it (its result image loads), and no traceback shows.
``02-bulk-prompt-sweep`` is run too and its gallery is screenshotted; with
``MEDIAGEN_UPDATE_SCREENSHOT=1`` that screenshot also refreshes ``notebooks/images/sweep-gallery.png``
(the README's picture). Screenshots of every step go to ``test-artifacts/`` (git-ignored).
"""

import io
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'")
from playwright.sync_api import Locator, Page, expect

from mediagen_nb.sandbox import kept

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_TIMEOUT_S = 90
# User settings of the temporary JupyterLab: no news or update checks (no request leaves the machine).
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


def find_chromium() -> str | None:
    """The Chromium executable (Debian's ``/usr/bin/chromium`` first), or None when not installed."""
    for candidate in CHROMIUM_CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    return None


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: its base URL, token and the directory it serves."""

    url: str
    token: str
    root: Path

    def notebook_url(self, name: str) -> str:
        """The page that opens ``name`` in a fresh workspace layout."""
        return f"{self.url}/lab/tree/{name}?reset&token={self.token}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Local state of someone's earlier runs (ledgers, downloads), never part of a fresh clone.
COPY_IGNORED = (".mediagen", "output", ".ipynb_checkpoints", "__pycache__", ".pytest_cache")


def _copy_notebooks(source: Path, target: Path) -> None:
    """Copy the notebooks folder, with every saved output and execution count stripped."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*COPY_IGNORED))
    for path in target.glob("*.ipynb"):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for cell in notebook.get("cells", []):
            if cell.get("cell_type") == "code":
                cell["outputs"] = []
                cell["execution_count"] = None
        path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")


def _server_env(home: Path) -> dict[str, str]:
    """The server's (and so the kernel's) environment: no MEDIAGEN_* but a fast sandbox clock, and the
    user's folders in ``home`` (so the kernels' kept sandbox is this server's own)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEDIAGEN_", "JUPYTER", "JPY_", "IPYTHON", "XDG_"))
    }
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        JUPYTER_CONFIG_DIR=str(home / "jupyter-config"),
        JUPYTER_DATA_DIR=str(home / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(home / "jupyter-runtime"),
        IPYTHONDIR=str(home / "ipython"),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        MEDIAGEN_TIME_SCALE="600",
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture(scope="module")
def chromium() -> str:
    """The Chromium executable; the module is skipped, with the reason, only when it is missing."""
    path = find_chromium()
    if path is None:
        pytest.skip(
            "chromium is not installed (no /usr/bin/chromium): run `apt-get install -y chromium` "
            "(.ci/run does when it can)"
        )
    return path


@pytest.fixture(scope="module")
def artifacts() -> Path:
    """``test-artifacts/`` at the repository root (git-ignored), for screenshots and logs."""
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "browser-console.log").unlink(missing_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, artifacts: Path, chromium: str) -> Iterator[Lab]:
    """JupyterLab on a free 127.0.0.1 port serving a stripped copy of ``notebooks/``; stopped after."""
    pytest.importorskip("jupyterlab", reason="jupyterlab is not installed: pip install -e '.[dev]'")
    home = tmp_path_factory.mktemp("lab-home")
    root = home / "notebooks"
    if NOTEBOOKS.is_dir():
        _copy_notebooks(NOTEBOOKS, root)
    else:
        root.mkdir()
    settings_dir = home / "user-settings"
    for name, values in LAB_SETTINGS.items():
        target = settings_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values), encoding="utf-8")
    port, token = _free_port(), secrets.token_hex(16)
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--expose-app-in-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings_dir}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]
    log_path = artifacts / "jupyter-server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=root,
            env=_server_env(home),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_for_server(process, url, token, log_path)
            yield Lab(url=url, token=token, root=root)
        finally:
            _shutdown_kernels(f"http://127.0.0.1:{port}", token)
            _stop(process)
            kept.stop(home / ".local" / "share" / "mediagen_nb" / "sandbox")  # the kernels' sandbox


def _wait_for_server(process: subprocess.Popen[bytes], url: str, token: str, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"JupyterLab exited with {process.returncode}; see {log_path}")
        try:
            if httpx.get(f"{url}/api/status", params={"token": token}, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    pytest.fail(f"JupyterLab did not answer within {SERVER_START_TIMEOUT_S} s; see {log_path}")


def _shutdown_kernels(url: str, token: str) -> None:
    """Ask the server to shut its kernels down."""
    try:
        with httpx.Client(base_url=url, params={"token": token}, timeout=10) as http:
            for kernel in http.get("/api/kernels").json():
                http.delete(f"/api/kernels/{kernel['id']}")
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        pass  # the server is gone already: its kernels went with it


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server (and its kernels, in its process group): SIGTERM, then SIGKILL after 15 s."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, 15)
        process.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    """Headless Chromium driven by Playwright (never ``playwright install``: Debian's build is used)."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'"
    )
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_FLAGS, timeout=60_000
        )
        try:
            yield browser
        finally:
            browser.close()


QUICKSTART = "01-quickstart.ipynb"
SWEEP = "02-bulk-prompt-sweep.ipynb"
README_SCREENSHOT = NOTEBOOKS / "images" / "sweep-gallery.png"
README_SCREENSHOT_MAX_BYTES = 300_000
VIEWPORT = {"width": 1280, "height": 860}
GALLERY_VIEWPORT = {"width": 1280, "height": 1200}
OPEN_TIMEOUT_S = 90  # page load, kernel start
RUN_TIMEOUT_S = 180  # Run All of one notebook
MEDIA_TIMEOUT_MS = 30_000
FORM_TIMEOUT_MS = 90_000
FORM_PROMPT = "a lighthouse at dawn, watercolor"
H264 = 'video/mp4; codecs="avc1.42E01E"'
AUDIO_TYPES = {".wav": "audio/wav", ".mp3": "audio/mpeg", ".ogg": "audio/ogg"}
OUTPUT = ".jp-OutputArea-output"
RUN_BUTTON = "button.jupyter-button"
RUN_TEXT = re.compile(r"^\s*Run\s*$")
STDERR = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'

# The notebook's state, read from JupyterLab's own models (``--expose-app-in-browser``).
NOTEBOOK_STATE_JS = """
(path) => {
  const app = window.jupyterapp;
  if (!app) return null;
  const panel = Array.from(app.shell.widgets('main')).find(w => w.context && w.context.path === path);
  if (!panel || !panel.content || !panel.sessionContext) return null;
  const kernel = panel.sessionContext.session ? panel.sessionContext.session.kernel : null;
  const cells = [];
  for (const cell of panel.content.widgets) {
    const model = cell.model;
    if (model.type !== 'code') continue;
    const errors = [];
    for (let i = 0; i < model.outputs.length; i++) {
      const output = model.outputs.get(i).toJSON();
      if (output.output_type === 'error') errors.push(`${output.ename}: ${output.evalue}`);
    }
    cells.push({count: model.executionCount, state: model.executionState || null, errors});
  }
  return {id: panel.id, kernel: kernel ? kernel.status : null, cells};
}
"""
RUN_ALL_JS = """
async (id) => {
  const app = window.jupyterapp;
  app.shell.activateById(id);
  app.shell.collapseLeft();
  await app.commands.execute('notebook:run-all-cells');
}
"""
FETCH_JS = """
async (src) => {
  const response = await fetch(src);
  const body = await response.arrayBuffer();
  return {status: response.status, type: response.headers.get('content-type'), size: body.byteLength};
}
"""


class Shots:
    """Numbered screenshots of one notebook's steps in ``test-artifacts/``."""

    def __init__(self, page: Page, folder: Path, prefix: str) -> None:
        self.page, self.folder, self.prefix, self.count = page, folder, prefix, 0
        for old in folder.glob(f"{prefix}-*"):
            old.unlink()

    def take(self, step: str) -> Path:
        """Save the viewport as ``{prefix}-NN-{step}.png``; return its path."""
        self.count += 1
        path = self.folder / f"{self.prefix}-{self.count:02d}-{step}.png"
        self.page.screenshot(path=str(path))
        return path


@contextmanager
def failure_screenshot(shots: Shots) -> Iterator[None]:
    """On any failure, save a screenshot of the page as it was."""
    try:
        yield
    except BaseException:
        with suppress(Exception):  # the page itself may be gone; the original error matters more
            shots.take("failure")
            (shots.folder / f"{shots.prefix}-failure.html").write_text(shots.page.content(), encoding="utf-8")
        raise


@pytest.fixture
def page(browser: Any, artifacts: Path) -> Iterator[Page]:
    """A fresh browser context and page; requests to anything but 127.0.0.1 are refused and noted."""
    context = browser.new_context(viewport=VIEWPORT)
    refused: list[str] = []

    def only_loopback(route: Any) -> None:
        url = route.request.url
        if urlsplit(url).hostname in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            refused.append(url)
            route.abort()

    context.route(re.compile(r"^https?://"), only_loopback)
    context.set_default_timeout(30_000)
    page = context.new_page()
    console = artifacts / "browser-console.log"
    page.on("console", lambda msg: _append(console, f"[{msg.type}] {msg.text}"))
    try:
        yield page
    finally:
        if refused:
            _append(console, "refused non-loopback requests: " + ", ".join(sorted(set(refused))))
        context.close()


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(line + "\n")


def open_notebook(page: Page, lab: Lab, name: str) -> str:
    """Open ``name`` in JupyterLab and wait until its kernel is idle; return the panel's id."""
    assert (lab.root / name).is_file(), f"notebooks/{name} is missing"
    page.goto(lab.notebook_url(name), wait_until="domcontentloaded", timeout=OPEN_TIMEOUT_S * 1000)
    deadline = time.monotonic() + OPEN_TIMEOUT_S
    while time.monotonic() < deadline:
        accept = page.locator(".jp-Dialog .jp-mod-accept")  # a kernel choice, if the notebook names none
        if accept.count():
            accept.first.click()
        state = page.evaluate(NOTEBOOK_STATE_JS, name)
        if state and state["kernel"] == "idle":
            return str(state["id"])
        time.sleep(0.5)
    raise AssertionError(f"{name} did not open with an idle kernel within {OPEN_TIMEOUT_S} s")


def run_all(page: Page, name: str, panel_id: str) -> None:
    """Run All Cells; wait (bounded) until every code cell has run and the kernel is idle.

    A cell that raises stops Run All, so an error output fails at once with its message.
    """
    page.evaluate(RUN_ALL_JS, panel_id)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    settled = 0
    state: Any = None
    while time.monotonic() < deadline:
        state = page.evaluate(NOTEBOOK_STATE_JS, name)
        errors = [error for cell in state["cells"] for error in cell["errors"]]
        assert not errors, f"{name} raised: {errors}"
        done = state["kernel"] == "idle" and all(
            cell["count"] is not None and cell["state"] != "running" for cell in state["cells"]
        )
        settled = settled + 1 if done else 0
        if settled >= 3:  # idle over three polls: no queued cell is about to start
            return
        time.sleep(0.4)
    raise AssertionError(f"{name} did not finish within {RUN_TIMEOUT_S} s: {json.dumps(state)}")


def assert_no_traceback(page: Page) -> None:
    """No stderr or error output in the page shows a Python traceback."""
    texts = page.locator(STDERR).all_text_contents()
    tracebacks = [text for text in texts if "Traceback" in text]
    assert not tracebacks, f"a traceback is shown: {tracebacks[0][:2000]}"


def reveal(element: Locator) -> None:
    """Scroll ``element`` to the middle of the notebook, so a lazy or skipped (offscreen) cell renders."""
    element.evaluate("el => el.scrollIntoView({block: 'center'})")
    element.page.wait_for_timeout(200)


def assert_image_loads(image: Locator) -> int:
    """Scroll the (lazy-loaded) image into view, wait until it is complete; return its natural width."""
    reveal(image)
    image.page.wait_for_function("el => el.complete", arg=image.element_handle(), timeout=MEDIA_TIMEOUT_MS)
    width = int(image.evaluate("el => el.naturalWidth"))
    assert width > 0, f"image did not load: {image.get_attribute('src')}"
    return width


def fetch_source(page: Page, src: str) -> dict[str, Any]:
    """Status, type and size of a media source. The page reads a data: URI or one of its own origin;
    the sandbox's media (another origin, sent without CORS headers: a page of another site may show
    them but not read them) are read from here."""
    if src.startswith("data:") or urlsplit(src).netloc == urlsplit(page.url).netloc:
        fetched: dict[str, Any] = page.evaluate(FETCH_JS, src)
        return fetched
    response = httpx.get(src, timeout=30)
    return {
        "status": response.status_code,
        "type": response.headers.get("content-type"),
        "size": len(response.content),
    }


def check_media(media: Locator, mime: str) -> dict[str, Any]:
    """Check one ``<audio>``/``<video>``: a source that answers 200 with a media type, and that plays.

    When the browser can play ``mime`` the element must reach HAVE_METADATA without an error; when
    it cannot (a build without the codec), the source must still be served correctly.
    """
    reveal(media)
    src = media.evaluate("el => el.currentSrc || el.src")
    assert src, "media element without a source"
    fetched = fetch_source(media.page, src)
    kind = mime.split("/")[0]
    assert fetched["status"] == 200, f"{src} answered {fetched['status']}"
    assert (fetched["type"] or "").startswith(f"{kind}/"), f"{src} is served as {fetched['type']}"
    assert fetched["size"] > 0, f"{src} is empty"
    playable = media.evaluate("(el, mime) => el.canPlayType(mime)", mime)
    report = {"src": src, "mime": mime, "canPlayType": playable, "served_as": fetched["type"]}
    if playable:
        media.page.wait_for_function(
            "el => el.readyState >= 1 || el.error !== null",
            arg=media.element_handle(),
            timeout=MEDIA_TIMEOUT_MS,
        )
        error = media.evaluate("el => el.error && `${el.error.code} ${el.error.message}`")
        assert error is None, f"{src} does not play: MediaError {error}"
        report["readyState"] = media.evaluate("el => el.readyState")
        report["duration"] = media.evaluate("el => el.duration")
    return report


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
            mime = AUDIO_TYPES.get(Path(urlsplit(src).path).suffix.lower(), "audio/mpeg")
            report["audio"].append(check_media(audios.nth(i), mime))
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
    from mediagen_nb.client import AsyncClient, Limits, previews

    client = AsyncClient(
        served.demo_key,
        base_url=served.base_url,
        limits=Limits(time_scale=600),
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
    from mediagen_nb.client import AsyncClient, Limits, previews

    client = AsyncClient(
        served.demo_key,
        base_url=served.base_url,
        limits=Limits(time_scale=600),
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

    context.route("**/*", only_the_jupyter_server)
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
