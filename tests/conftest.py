"""Shared fixtures: a fresh sandbox per test, reached over real HTTP (in-process ASGI or uvicorn).

A test about time runs on the manual clock: mark it (or its module, with ``pytestmark``)
``@pytest.mark.manual_clock`` and its ``sandbox``, ``api`` and ``served`` (and the fixtures built on them:
``kit``, ``sandbox_client``, ``async_client``) are on virtual time that stands still until the test moves
it (``sandbox.advance(s)``, ``POST /_sandbox/clock``) or a client steps it (``Client.for_sandbox`` gives
its clients a stepping clock, so their pauses are instant and exact). A long poll's hold moves it too,
until its generation settles or its wait is up, as if that much time had passed. ``@pytest.mark.scaled_clock``
on a test of such a module keeps it on the fast real clock (a test whose subject is that clock). The
closer marker wins; unmarked tests run at x600 real time, which only tests that never look at time should.
"""

import os
import signal
import ssl
import sys
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx._transports.default
import pytest
from _cleanup import end_of_suite, suite_folder
from _shared import start_redis, unused_port
from _spellings import SPELLINGS, names_file

from mediagen_nb.client import connection, settings
from mediagen_nb.client.context import PROCESS
from mediagen_nb.protocol import wire
from mediagen_nb.runtime import tls
from mediagen_nb.sandbox import Sandbox, SandboxConfig, kept

TIME_SCALE = 600.0  # ten simulated minutes per real second

# The suite starts hundreds of Python processes (kernels, the CLI, sandboxes, JupyterLab, four workers);
# where PYTHONDONTWRITEBYTECODE is set (as on CI images) each compiled the package, the tests and half
# of pandas and IPython again: about 100 s of the suite's CPU on a 2-core machine. This session and its
# subprocesses keep bytecode in the usual __pycache__ folders (which git ignores).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Nothing a test session does touches the user's own folders: HOME, the data folder (the ledger, the kept
# sandbox) and the cache folder are folders of this session, for this process, its subprocesses and
# kernels (platformdirs follows XDG_* on Linux). The user's real ones are remembered for the test that
# checks they stay untouched.
USER_HOME = Path(os.environ.get("HOME") or Path.home())
USER_DATA = Path(os.environ.get("XDG_DATA_HOME") or USER_HOME / ".local" / "share")
USER_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or USER_HOME / ".cache")
# ... and it cleans up after itself: every temporary folder of the session, its workers and the processes
# they start (pytest's tmp_path included) lies in one folder, removed when the session ends, after every
# kept sandbox started there is stopped (tests/_cleanup.py; tests/test_suite_cleanup.py checks it).
SUITE = suite_folder()
SESSION_HOME = Path(tempfile.mkdtemp(prefix="mediagen-home-"))
os.environ["HOME"] = str(SESSION_HOME)
os.environ["XDG_DATA_HOME"] = str(SESSION_HOME / ".local" / "share")
os.environ["XDG_CACHE_HOME"] = str(SESSION_HOME / ".cache")

# The limiters' shared windows go to a file of this test session (and its kernels and subprocesses),
# not the user's cache: a test run never waits on, or for, the user's own work.
os.environ[settings.ENV_LIMITS_URL] = str(Path(tempfile.mkdtemp(prefix="mediagen-limits-")) / "limits.sqlite")

# The tests make thousands of httpx clients of their own (httpx.get, httpx.Client() against a served
# sandbox); each would load the CA bundle again (about 30 ms of CPU, an eighth of the suite's CPU on
# a 2-core machine). They share the package's one context (runtime/tls.py), as its own clients do.
_create_ssl_context = httpx._transports.default.create_ssl_context


def _shared_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
    if verify is True and cert is None and trust_env:
        return tls.context()
    return _create_ssl_context(verify=verify, cert=cert, trust_env=trust_env)


httpx._transports.default.create_ssl_context = _shared_ssl_context


# pytest-xdist's loadfile gives each worker whole files, in the order of the collection: the files that
# run longest go first (those with tests marked realtime, which mostly wait on wall-time windows and
# signals; then a browser and JupyterLab, kernels or kept sandboxes per test; measured with --durations),
# then the others by their number of tests, so no worker is left alone with a long file at the end while
# the others idle (xdist's own order, by number of tests, put the browser files last).
LONGEST_FIRST = (
    "tests/browser/",
    "tests/test_kept_sandbox.py",
    "tests/sandbox/test_kept.py",
    "tests/notebook/test_secrets_verbose.py",
    "tests/test_notebook_errors.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """xdist keeps the order below (as ``--no-loadscope-reorder`` would)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_unconfigure(config: pytest.Config) -> None:
    """The last thing the session does (after its workers ended): stop what it left and remove its folder."""
    end_of_suite(SUITE)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the files for the workers; tests within a file keep their order."""

    def file_of(item: pytest.Item) -> str:
        return item.nodeid.split("::", 1)[0]

    files = Counter(file_of(item) for item in items)
    waiting = {file_of(item) for item in items if item.get_closest_marker("realtime")}

    def rank(item: pytest.Item) -> tuple[bool, bool, int]:
        file = file_of(item)
        return file not in waiting, not file.startswith(LONGEST_FIRST), -files[file]

    items.sort(key=rank)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``spellings`` runs against the sandbox in our spelling and in another
    (``tests/_spellings.py``), its clients told by ``MEDIAGEN_WIRE``."""
    if metafunc.definition.get_closest_marker("spellings"):
        if "spelling" not in metafunc.fixturenames:  # fixtures that ask for their sandbox by name
            metafunc.fixturenames.append("spelling")
        metafunc.parametrize("spelling", list(SPELLINGS), indirect=True)


@pytest.fixture
def spelling(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> wire.Names:
    """How the test's sandboxes spell the names the spec does not show: ours, unless the test is marked
    ``spellings``; for another spelling, ``MEDIAGEN_WIRE`` names a names file of it."""
    names = SPELLINGS[getattr(request, "param", "ours")]
    if names != wire.DEFAULT:
        monkeypatch.setenv(settings.ENV_WIRE, str(names_file(tmp_path_factory.mktemp("wire"), names)))
    return names


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Ctrl-C as in a user's interpreter or kernel: a SIGINT raises KeyboardInterrupt in the main thread.

    pytest-xdist's workers start with SIGINT ignored, and a child process inherits an ignored signal (a
    Python started so never installs its KeyboardInterrupt). A test that sends one to its own process, or
    to a child it starts meanwhile, saw nothing unless a test run before it on that worker had set
    Python's default (an in-process IPython does): they passed or failed with the order the files went
    to the workers.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def clock_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The clock of a test's sandbox: manual under ``manual_clock``, else x600 (the closer marker wins)."""
    for marker in request.node.iter_markers():
        if marker.name == "manual_clock":
            return {"clock": "manual"}
        if marker.name == "scaled_clock":
            break
    return {"time_scale": TIME_SCALE}


def make_sandbox(request: pytest.FixtureRequest, spelling: wire.Names) -> Sandbox:
    """A sandbox on the test's clock (seed 1, loopback webhooks allowed). On the manual clock the test and
    its clients are the only movers, so a hold (a long poll) moves the clock itself instead of hanging."""
    config = SandboxConfig(**clock_options(request), seed=1, allow_private_webhooks=True, wire=spelling)
    made = Sandbox(config)
    if config.clock == "manual":
        made.stepping_clock()  # the test is its stepper: from now on its holds move it too
    return made


@pytest.fixture
def sandbox(request: pytest.FixtureRequest, spelling: wire.Names) -> Sandbox:
    """An in-process sandbox on the test's clock (x600, or manual under ``manual_clock``)."""
    return make_sandbox(request, spelling)


@pytest.fixture
async def api(sandbox: Sandbox) -> AsyncIterator[httpx.AsyncClient]:
    """An async client on the in-process sandbox, with the demo key."""
    async with httpx.AsyncClient(
        transport=sandbox.transport(),
        base_url="http://sandbox.test",
        headers={"Authorization": f"Bearer {sandbox.demo_key}"},
        timeout=30,
    ) as client:
        yield client


@pytest.fixture
def served(request: pytest.FixtureRequest, spelling: wire.Names) -> Iterator[Sandbox]:
    """A sandbox served by uvicorn on 127.0.0.1 (for tests that need a real socket), on the test's clock."""
    with make_sandbox(request, spelling) as sandbox:
        yield sandbox


@pytest.fixture
def user_folders() -> tuple[Path, Path]:
    """The user's real data and cache folders, as they were before this session moved them."""
    return USER_DATA, USER_CACHE


@pytest.fixture(autouse=True)
def own_kept_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test (and the processes it starts) has a data folder of its own, so an embedded sandbox it
    uses is its own kept sandbox, at the clock it asks for; the sandbox is stopped when the test ends.
    (A plain ``mkdtemp`` in the session's folder: pytest's ``mktemp`` scans its numbered folders and moves
    a symlink at every call, 2.7 ms each, twice a test.)"""
    data = Path(tempfile.mkdtemp(prefix="data-"))
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.setattr(PROCESS, "embedded", None)
    yield data
    folder = data / "mediagen_nb" / "sandbox"
    if (folder / kept.RECORD).is_file():
        kept.stop(folder)


@pytest.fixture(autouse=True)
def own_ledger(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test writes paid starts to a ledger of its own, with a budget of its own (none set, nothing
    spent) and no current client: the process shares these by design; a test starts from none of them.
    """
    path = Path(tempfile.mkdtemp(prefix="ledger-")) / "ledger.sqlite"
    monkeypatch.setenv(settings.ENV_LEDGER, str(path))
    monkeypatch.delenv(settings.ENV_BUDGET, raising=False)
    monkeypatch.setattr(PROCESS, "budget", None)
    connection.use(None)
    yield path
    _close_current()
    for ledger in PROCESS.ledgers.values():
        ledger.close()
    PROCESS.ledgers.clear()


def _close_current() -> None:
    """Close the clients the test made current (on the background loop for the async one)."""
    made, made_async = PROCESS.client, PROCESS.async_client
    connection.use(None)
    if made is not None:
        made.close()
    if made_async is not None:
        from mediagen_nb.batch import loop

        loop.submit(made_async.aclose()).result(10)


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A redis-server of the test's own on loopback (killed after it), as a ``redis://`` URL."""
    pytest.importorskip("redis", reason="the redis extra is not installed")
    port = unused_port()
    process = start_redis(port, tmp_path)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.kill()
        process.wait(10)
