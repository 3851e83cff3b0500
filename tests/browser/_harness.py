"""The browser tests' harness: Debian's chromium driven by Playwright (never ``playwright install``), a
Jupyter server on a free 127.0.0.1 port, and what a test does in a page (open a notebook, Run All,
check that images load and media play). Screenshots and logs go to ``test-artifacts/``.
"""

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from _shared import unused_port
from _wait import wait_until

pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'")
from playwright.sync_api import Locator, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

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
# No build check: every page load would ask the server for one, which runs `node yarn config` three times.
PAGE_CONFIG = {"buildCheck": False, "buildAvailable": False}
# The setting a user turns on for a saved notebook to keep its widgets (off by default).
SAVE_WIDGET_STATE = {"@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings": {"saveState": True}}


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


# Local state of someone's earlier runs (ledgers, downloads), never part of a fresh clone.
COPY_IGNORED = (".mediagen", "output", ".ipynb_checkpoints", "__pycache__", ".pytest_cache")


def copy_notebooks(source: Path, target: Path) -> None:
    """Copy the notebooks folder, with every saved output and execution count stripped."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*COPY_IGNORED))
    for path in target.glob("*.ipynb"):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for cell in notebook.get("cells", []):
            if cell.get("cell_type") == "code":
                cell["outputs"] = []
                cell["execution_count"] = None
        path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")


def config_dir(home: Path) -> Path:
    """The test server's ``JUPYTER_CONFIG_DIR`` in ``home``."""
    return home / "jupyter-config"


def server_env(home: Path) -> dict[str, str]:
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
        JUPYTER_CONFIG_DIR=str(config_dir(home)),
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


@contextmanager
def jupyter(
    app: str, *arguments: str, cwd: Path, env: dict[str, str], log: Path, root: Path
) -> Iterator[Lab]:
    """``python -m app *arguments`` (``jupyterlab`` or ``jupyter_server``) run in ``cwd`` on a free
    127.0.0.1 port, signed in by a token, serving ``root``; its kernels shut down and it stopped after."""
    port, token = unused_port(), secrets.token_hex(16)
    command = [
        sys.executable,
        "-m",
        app,
        *arguments,
        "--no-browser",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
    ]
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            _wait_for_server(process, url, token, log)
            yield Lab(url=url, token=token, root=root)
        finally:
            shutdown_kernels(url, token)
            _stop(process)


def a_clone(home: Path) -> Path:
    """A fresh clone's layout in ``home``: the repository root with a stripped copy of ``notebooks/``."""
    repo = home / "repo"
    repo.mkdir()
    copy_notebooks(NOTEBOOKS, repo / "notebooks")
    return repo


@contextmanager
def notebooks_lab(
    home: Path, log: Path, env: dict[str, str] | None = None, save_widget_state: bool = False
) -> Iterator[Lab]:
    """JupyterLab opened the README's way, ``jupyter lab notebooks/`` at the root of a fresh clone in
    ``home`` (``env``: :func:`server_env`'s by default); after, it and the kernels' kept sandbox stop."""
    pytest.importorskip("jupyterlab", reason="jupyterlab is not installed: pip install -e '.[dev]'")
    repo = a_clone(home)
    arguments = lab_arguments(home, save_widget_state)
    try:
        with jupyter(
            "jupyterlab",
            "notebooks/",
            *arguments,
            cwd=repo,
            env=env or server_env(home),
            log=log,
            root=repo / "notebooks",
        ) as lab:
            yield lab
    finally:
        kept.stop(home / ".local" / "share" / "mediagen_nb" / "sandbox")


def lab_arguments(home: Path, save_widget_state: bool = False) -> list[str]:
    """JupyterLab's options for a test: its app open to the page's scripts, no news or update checks (no
    request leaves the machine), its settings and workspaces in ``home``."""
    settings_dir = home / "user-settings"
    settings = {**LAB_SETTINGS, **(SAVE_WIDGET_STATE if save_widget_state else {})}
    for name, values in settings.items():
        target = settings_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values), encoding="utf-8")
    page_config = config_dir(home) / "labconfig" / "page_config.json"
    page_config.parent.mkdir(parents=True, exist_ok=True)
    page_config.write_text(json.dumps(PAGE_CONFIG), encoding="utf-8")
    return [
        "--expose-app-in-browser",
        f"--LabApp.user_settings_dir={settings_dir}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]


def _wait_for_server(process: subprocess.Popen[bytes], url: str, token: str, log_path: Path) -> None:
    """Wait until the server in ``process`` answers; fail at once, naming its log, if it exits."""

    def answering(http: httpx.Client) -> bool:
        if process.poll() is not None:
            pytest.fail(f"JupyterLab exited with {process.returncode}; see {log_path}")
        try:
            return http.get(f"{url}/api/status", params={"token": token}).status_code == 200
        except httpx.HTTPError:
            return False

    with httpx.Client(timeout=2) as http:  # a look is a request: every 50 ms, not to slow the start
        wait_until(lambda: answering(http), SERVER_START_TIMEOUT_S, f"JupyterLab (see {log_path})", 0.05)


def shutdown_kernels(url: str, token: str) -> None:
    """Ask the server to end its sessions and shut its kernels down: a notebook opened after starts anew."""
    try:
        with httpx.Client(base_url=url, params={"token": token}, timeout=10) as http:
            for session in http.get("/api/sessions").json():
                http.delete(f"/api/sessions/{session['id']}")
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


VIEWPORT = {"width": 1280, "height": 860}
OPEN_TIMEOUT_S = 90  # page load, kernel start
RUN_TIMEOUT_S = 180  # Run All of one notebook
MEDIA_TIMEOUT_MS = 30_000
H264 = 'video/mp4; codecs="avc1.42E01E"'
AUDIO_TYPES = {".wav": "audio/wav", ".mp3": "audio/mpeg", ".ogg": "audio/ogg"}
OUTPUT = ".jp-OutputArea-output"
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
      const output = model.outputs.get(i);  // serialized only when an error (looked at every POLL_MS)
      if (output.type !== 'error') continue;
      const error = output.toJSON();
      errors.push(`${error.ename}: ${error.evalue}`);
    }
    cells.push({count: model.executionCount, state: model.executionState || null, errors});
  }
  return {id: panel.id, kernel: kernel ? kernel.status : null, cells};
}
"""
DIALOG_ACCEPT = ".jp-Dialog .jp-mod-accept"
POLL_MS = 100  # how often Playwright looks at the page while it waits for a state
# The panel's id once its kernel is idle, or "dialog" while a dialog asks to be accepted; else null.
OPENED_JS = f"""
(path) => {{
  if (document.querySelector('{DIALOG_ACCEPT}')) return 'dialog';
  const state = ({NOTEBOOK_STATE_JS.strip()})(path);
  return state && state.kernel === 'idle' ? state.id : null;
}}
"""
# The notebook's state once every code cell has run and the kernel is idle, or as soon as one raised.
RAN_JS = f"""
(path) => {{
  const state = ({NOTEBOOK_STATE_JS.strip()})(path);
  if (!state) return null;
  if (state.cells.some(cell => cell.errors.length)) return state;
  const ran = state.cells.every(cell => cell.count !== null && cell.state !== 'running');
  return state.kernel === 'idle' && ran ? state : null;
}}
"""
RUN_ALL_JS = """
async (id) => {
  const app = window.jupyterapp;
  app.shell.activateById(id);
  app.shell.collapseLeft();
  await app.commands.execute('notebook:run-all-cells');
}
"""
IN_LAB_JS = "() => Boolean(window.jupyterapp && window.jupyterapp.shell)"
OPEN_JS = """
async (path) => {
  const app = window.jupyterapp;
  await app.commands.execute('docmanager:open', {path});
  // the Launcher JupyterLab shows while nothing is open: the page looks as the notebook's URL opens it
  for (const widget of Array.from(app.shell.widgets('main'))) if (!widget.context) widget.close();
}
"""
OPEN_NOTEBOOKS_JS = """
() => Array.from(window.jupyterapp.shell.widgets('main'))
  .filter(w => w.context && w.sessionContext).map(w => w.context.path)
"""
CLOSE_JS = """
async (path) => {
  const app = window.jupyterapp;
  const panel = app && Array.from(app.shell.widgets('main')).find(w => w.context && w.context.path === path);
  if (panel) {
    await panel.sessionContext.shutdown();
    panel.context.model.dirty = false;  // closed unsaved, as it was run: no "save your work?" dialog
    const gone = new Promise(resolve => panel.disposed.connect(() => resolve()));
    panel.close();  // the document manager disposes of it once it has checked it may
    await Promise.race([gone, new Promise(resolve => setTimeout(resolve, 10000))]);
  }
  return !Array.from(app.shell.widgets('main')).some(w => w.context && w.context.path === path);
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


# A route's pattern is matched by Playwright's driver; only the requests it matches make a round trip to
# this process (JupyterLab's page alone loads some hundred files), so routes match only what they refuse.
NOT_LOOPBACK = re.compile(r"^https?://(?!(?:127\.0\.0\.1|localhost)(?:[:/]|$))")


def not_of(origin: str) -> re.Pattern[str]:
    """Every URL but those of ``origin`` (``http://127.0.0.1:8888``), for a route that refuses them."""
    return re.compile(rf"^(?!{re.escape(origin)}/)")


@contextmanager
def loopback_page(browser: Any, artifacts: Path) -> Iterator[Page]:
    """A fresh browser context and page; requests to anything but 127.0.0.1 are refused and noted (as
    on a machine offline: no CDN), the console goes to ``browser-console.log``; closed after."""
    context = browser.new_context(viewport=VIEWPORT)
    refused: list[str] = []

    def only_loopback(route: Any) -> None:
        url = route.request.url
        if urlsplit(url).hostname in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            refused.append(url)
            route.abort()

    context.route(NOT_LOOPBACK, only_loopback)
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


@pytest.fixture
def page(browser: Any, artifacts: Path) -> Iterator[Page]:
    """A page of its own for a test: :func:`loopback_page`."""
    with loopback_page(browser, artifacts) as made:
        yield made


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(line + "\n")


def open_notebook(page: Page, lab: Lab, name: str) -> str:
    """Open ``name`` in JupyterLab and wait until its kernel is idle; return the panel's id.

    A page that shows this lab's JupyterLab already opens it there, as a person opens a second notebook
    (File > Open: about 1 CPU-s of Chromium, where a new load of JupyterLab costs 4-8); any other page
    goes to the notebook's URL.
    """
    assert (lab.root / name).is_file(), f"notebooks/{name} is missing"
    if page.url.startswith(f"{lab.url}/lab") and page.evaluate(IN_LAB_JS):
        page.evaluate(OPEN_JS, name)
    else:
        page.goto(lab.notebook_url(name), wait_until="domcontentloaded", timeout=OPEN_TIMEOUT_S * 1000)
    deadline = time.monotonic() + OPEN_TIMEOUT_S
    accept = page.locator(DIALOG_ACCEPT)  # a kernel choice, if the notebook names none
    while (left := deadline - time.monotonic()) > 0:
        try:
            opened = page.wait_for_function(OPENED_JS, arg=name, timeout=left * 1000, polling=POLL_MS)
        except PlaywrightTimeout:
            break
        if (panel := opened.json_value()) != "dialog":
            return str(panel)
        accept.first.click()
    raise AssertionError(f"{name} did not open with an idle kernel within {OPEN_TIMEOUT_S} s")


def close_notebook(page: Page, name: str) -> None:
    """Shut ``name``'s kernel down and close its tab without saving: its outputs leave the page."""
    assert page.evaluate(CLOSE_JS, name), f"{name} is still open"


@contextmanager
def notebooks_closed_after(page: Page) -> Iterator[Page]:
    """``page`` for a test that opens notebooks in it; after, every notebook open in it is closed (kernel
    shut down, unsaved), so the next test on the page starts from JupyterLab with nothing open. A page
    that cannot be put back so is emptied: the next test loads JupyterLab anew."""
    try:
        yield page
    finally:
        try:
            for name in page.evaluate(OPEN_NOTEBOOKS_JS) if page.evaluate(IN_LAB_JS) else []:
                close_notebook(page, name)
        except Exception:  # a page left broken by a failure: that failure matters, not this one
            with suppress(Exception):
                page.goto("about:blank")


def run_all(page: Page, name: str, panel_id: str) -> None:
    """Run All Cells; wait (bounded) until every code cell has run and the kernel is idle.

    JupyterLab's Run All resolves once every cell's execution has ended (or one raised and stopped it),
    so no cell is queued after it; an error output fails at once with its message.
    """
    page.evaluate(RUN_ALL_JS, panel_id)
    try:
        ended = page.wait_for_function(RAN_JS, arg=name, timeout=RUN_TIMEOUT_S * 1000, polling=POLL_MS)
    except PlaywrightTimeout:
        state = page.evaluate(NOTEBOOK_STATE_JS, name)
        raise AssertionError(f"{name} did not finish within {RUN_TIMEOUT_S} s: {json.dumps(state)}") from None
    state = ended.json_value()
    errors = [error for cell in state["cells"] for error in cell["errors"]]
    assert not errors, f"{name} raised: {errors}"


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


def audio_type(src: str) -> str:
    """The media type of an audio source, by its file name (MP3 when it has none)."""
    return AUDIO_TYPES.get(Path(urlsplit(src).path).suffix.lower(), "audio/mpeg")


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
