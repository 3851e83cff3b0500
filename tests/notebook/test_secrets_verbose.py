"""The API key and the storage secret never show, whatever fails, even under ``%xmode Verbose``.

Issue 19: a non-ASCII Idempotency-Key printed ``headers = {'Authorization': 'Bearer pk_live_…'}`` 9 times
in a Verbose traceback, and the saved notebook kept it; an S3 upload failure printed the storage secret
in a 426-line botocore traceback. Each failing case runs here in a real IPython shell, in a notebook
executed by nbclient and saved, and through the ``mediagen`` command; then every output, the saved
``.ipynb``, the logs and every file the toolkit wrote (ledger, limits file, caches under a temp HOME)
are searched for a freshly minted key and the storage secret. Nothing found is the pass.
"""

import http.server
import json
import logging
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _shared import moto_s3, wav
from _shell import Notebook

from mediagen_nb.client.settings import ENV_LIMITS_URL, ENV_UPLOAD_URL
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[2]
IMAGE = '{"prompt": "a fox in the snow", "quality": "low"}'


def voice(target: Path, seconds: float = 4) -> Path:
    target.write_bytes(wav(seconds))
    return target


class _Echo(http.server.BaseHTTPRequestHandler):
    """A server that answers 401 repeating the Authorization header it was sent."""

    def _answer(self) -> None:
        said = self.headers.get("Authorization", "")
        body = json.dumps({"statusCode": 401, "message": f"Invalid key in 'Authorization: {said}'"}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def echo() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def s3() -> Iterator[str]:
    """A loopback S3 server (moto) with no bucket at all: every upload to it fails."""
    with moto_s3() as endpoint:
        yield endpoint


@pytest.fixture
def secrets(served: Sandbox) -> dict[str, str]:
    """A fresh key of the demo account, a revoked one, and a storage secret: what must never show."""
    url = f"{served.base_url}{path('sandbox_keys')}"
    good = httpx.post(url, json={"name": "verbose"}, timeout=10).json()["data"]["key"]
    revoked = httpx.post(url, json={"name": "old", "state": "revoked"}, timeout=10).json()["data"]["key"]
    return {"key": good, "revoked": revoked, "storage": "s3-secret-" + uuid.uuid4().hex}


@pytest.fixture
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """HOME and the XDG folders under tmp_path, so every cache and data file the toolkit writes is here."""
    dirs = {
        "HOME": tmp_path / "home",
        "XDG_CACHE_HOME": tmp_path / "home" / ".cache",
        "XDG_DATA_HOME": tmp_path / "home" / ".local" / "share",
        "XDG_CONFIG_HOME": tmp_path / "home" / ".config",
        "XDG_STATE_HOME": tmp_path / "home" / ".local" / "state",
    }
    for name, folder in dirs.items():
        folder.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(name, str(folder))
    return {name: str(folder) for name, folder in dirs.items()}


def leaks(secrets: dict[str, str], texts: dict[str, str]) -> list[str]:
    """``where: which secret`` for every text holding a secret (or the key without its prefix)."""
    found = []
    for where, text in texts.items():
        for name, secret in secrets.items():
            if secret in text or secret.removeprefix("pk_live_") in text:
                at = text.find(secret.removeprefix("pk_live_"))
                found.append(f"{where}: {name}: {text[max(0, at - 300) : at + 50]!r}")
    return found


def files_under(*folders: Path) -> dict[str, str]:
    """Every file under ``folders`` (ledgers, limits files, caches, logs, notebooks), as text."""
    texts = {}
    for folder in folders:
        for file in folder.rglob("*") if folder.is_dir() else [folder]:
            if file.is_file():
                texts[str(file)] = read_apart(file).decode("latin-1")
    return texts


def read_apart(file: Path) -> bytes:
    """``file``'s bytes, read by another process: closing a descriptor of an SQLite file this process has
    open drops every POSIX lock SQLite holds on it here (the worker's limits file, shared with the kernels
    and processes it starts), and a later test of the worker met "disk I/O error" opening it."""
    return subprocess.run(["cat", "--", str(file)], capture_output=True, check=True).stdout


# -- a real IPython shell ------------------------------------------------------------------------------


def test_failures_in_a_verbose_shell_show_no_secret(
    nb: Notebook,
    secrets: dict[str, str],
    s3: str,
    echo: str,
    private_home: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    own_ledger: Path,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MG_TEST_KEY", secrets["key"])
    monkeypatch.setenv("MG_TEST_SECRET", secrets["storage"])
    voice(tmp_path / "voice.wav")  # the shell's working folder
    nb.use_key(secrets["key"])
    nb.ok("%xmode Verbose")
    nb.ok("import os\nimport mediagen_nb as mg\nclient = mg.current()")
    nb.ok(  # the user's own cell, which succeeds; a failing line would show os.environ (IPython's doing)
        f"mg.uploads('s3://no-such-bucket/in', key='testing', secret=os.environ['MG_TEST_SECRET'], "
        f"endpoint_url={s3!r})"
    )
    monkeypatch.setenv("MEDIAGEN_API_KEY", secrets["key"])  # read by the client, never written in a cell
    cells = {
        "ValidationError": f"client.run('gpt-image-2', {IMAGE}, idempotency_key='caf\u00e9')",
        "UploadFailed": "client.generate('zonos2', text='Hello', audio='voice.wav')",
        "AuthenticationError": f"mg.Client(base_url={echo!r}).run('gpt-image-2', {IMAGE}, validate=False)",
    }
    errors: dict[str, BaseException] = {}
    for kind, source in cells.items():
        result = nb.run(source)
        assert type(result.error_in_exec).__name__ == kind, (kind, result.error_in_exec)
        errors[kind] = result.error_in_exec
    nb.ok("mg.uploads(None)")
    nb.use_key(secrets["revoked"])  # a 401 through a magic
    nb.run("%%generate gpt-image-2 --quality low\na fox")
    nb.use_key(secrets["key"])
    nb.post("sandbox_faults", {"modelScript": ["fail"]})  # a GenerationFailed
    failed = nb.run(f"client.generate('gpt-image-2', {IMAGE})")
    assert type(failed.error_in_exec).__name__ == "GenerationFailed"
    errors["GenerationFailed"] = failed.error_in_exec
    assert "UploadFailed: uploads: cannot put" in str(errors["UploadFailed"]._render_traceback_())  # type: ignore[attr-defined]

    texts = {"the shell's output": "".join(capsys.readouterr()), "the log": caplog.text}
    for kind, error in errors.items():  # the whole Verbose traceback, every frame's locals, as if shown
        shown = nb.shell.InteractiveTB.structured_traceback(type(error), error, error.__traceback__)
        texts[f"a Verbose traceback of {kind}"] = "\n".join(shown)
        assert "_drive" in texts[f"a Verbose traceback of {kind}"] or kind == "UploadFailed"
    texts.update(files_under(tmp_path, own_ledger, Path(os.environ[ENV_LIMITS_URL])))
    assert "401 Invalid, expired, or revoked API key" in texts["the shell's output"]
    assert any("HTTP Request" in r.getMessage() for r in caplog.records), "DEBUG logs were captured"
    assert leaks(secrets, texts) == []


# -- a notebook executed by nbclient, and saved --------------------------------------------------------

NOTEBOOK_CELLS = [
    "%load_ext mediagen_nb\n%xmode Verbose",
    "import logging, os, sys\n"
    "logging.basicConfig(filename=os.environ['MG_TEST_LOG'], level=logging.DEBUG, force=True)\n"
    "import mediagen_nb as mg\n"
    "client = mg.current()\n"
    "echo = os.environ['MG_TEST_ECHO']\n"
    "revoked = mg.Client(os.environ['MG_TEST_REVOKED'], base_url=os.environ['MEDIAGEN_BASE_URL'])\n"
    "mg.uploads('s3://no-such-bucket/in', key='testing', secret=os.environ['MG_TEST_SECRET'], "
    "endpoint_url=os.environ['MG_TEST_S3'])",
    f"client.run('gpt-image-2', {IMAGE}, idempotency_key='caf\u00e9')",
    "client.generate('zonos2', text='Hello', audio='voice.wav')",
    f"mg.Client(base_url=echo).run('gpt-image-2', {IMAGE}, validate=False)",
    f"revoked.run('gpt-image-2', {IMAGE})",
    "%%generate gpt-image-2 --quality low\na fox",
]
EXPECTED = ["ValidationError", "UploadFailed", "AuthenticationError", "AuthenticationError", "MagicError"]
# After each failing cell: the full Verbose traceback of the last error, every frame's locals, printed.
SHOW_LAST = (
    "_e = sys.last_value\n"
    "print('\\n'.join(get_ipython().InteractiveTB.structured_traceback(type(_e), _e, _e.__traceback__)))"
)


def test_a_saved_notebook_of_verbose_failures_holds_no_secret(
    served: Sandbox,
    secrets: dict[str, str],
    s3: str,
    echo: str,
    private_home: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    work = tmp_path / "work"
    work.mkdir()
    voice(work / "voice.wav")
    env = {
        "MEDIAGEN_BASE_URL": str(served.base_url),
        "MEDIAGEN_API_KEY": secrets["key"],
        "MEDIAGEN_TIME_SCALE": "600",
        "MEDIAGEN_LEDGER": str(tmp_path / "ledger.sqlite"),
        ENV_LIMITS_URL: str(tmp_path / "limits.sqlite"),
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "MG_TEST_LOG": str(tmp_path / "kernel.log"),
        "MG_TEST_SECRET": secrets["storage"],
        "MG_TEST_REVOKED": secrets["revoked"],
        "MG_TEST_S3": s3,
        "MG_TEST_ECHO": echo,
        "PYTHONPATH": str(ROOT),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    httpx.post(f"{served.base_url}{path('sandbox_faults')}", json={"modelScript": ["fail"]}, timeout=10)
    cells = NOTEBOOK_CELLS[:2]
    for source in NOTEBOOK_CELLS[2:]:
        cells += [source, SHOW_LAST]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(
        notebook,
        timeout=180,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(work)}},
    ).execute()
    saved = tmp_path / "verbose.ipynb"
    nbformat.write(notebook, saved)

    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert [o["ename"] for o in errors] == EXPECTED, [(o["ename"], o["evalue"]) for o in errors]
    # each SHOW_LAST cell's printout (a kernel may send one print as several stream messages)
    shown = [
        "".join(o["text"] for o in c["outputs"] if o.get("name") == "stdout") for c in notebook.cells[3::2]
    ]
    assert len(shown) == len(EXPECTED) and all("_drive" in text or "uploads" in text for text in shown[:4])
    texts = files_under(tmp_path)  # the saved notebook, the kernel's log, ledger, limits, HOME and caches
    assert "HTTP Request" in texts[str(tmp_path / "kernel.log")]
    assert leaks(secrets, texts) == []


# -- the mediagen command -----------------------------------------------------------------------------


def test_the_mediagen_command_shows_no_secret_when_it_fails(
    served: Sandbox, secrets: dict[str, str], s3: str, private_home: dict[str, str], tmp_path: Path
) -> None:
    voice(tmp_path / "voice.wav")
    sheet = tmp_path / "voices.csv"
    sheet.write_text("text,audio\nHello,voice.wav\n")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MEDIAGEN_", "AWS_"))}
    base.update(
        {
            "MEDIAGEN_BASE_URL": str(served.base_url),
            "MEDIAGEN_TIME_SCALE": "600",
            "MEDIAGEN_LEDGER": str(tmp_path / "ledger.sqlite"),
            ENV_LIMITS_URL: str(tmp_path / "limits.sqlite"),
            "PYTHONPATH": str(ROOT),
        }
    )
    storage = {
        ENV_UPLOAD_URL: "s3://no-such-bucket/in",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": secrets["storage"],
        "AWS_ENDPOINT_URL": s3,
    }
    runs = [
        (
            {"MEDIAGEN_API_KEY": secrets["revoked"]},
            ["generate", "gpt-image-2", "prompt=a fox", "quality=low"],
        ),
        ({"MEDIAGEN_API_KEY": secrets["revoked"]}, ["generate", "--json", "gpt-image-2", "prompt=a fox"]),
        ({"MEDIAGEN_API_KEY": secrets["revoked"]}, ["sweep", str(sheet), "--model=zonos2"]),
        (
            {"MEDIAGEN_API_KEY": secrets["key"], **storage},
            ["generate", "zonos2", "text=Hi", "audio=voice.wav"],
        ),
        ({"MEDIAGEN_API_KEY": secrets["key"], **storage}, ["sweep", str(sheet), "--model=zonos2"]),
    ]
    texts: dict[str, str] = {}
    for number, (extra, argv) in enumerate(runs):
        done = subprocess.run(
            [sys.executable, "-m", "mediagen_nb.cli", *argv],
            env={**base, **extra},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode != 0 and "Traceback" not in done.stdout + done.stderr, (argv, done.stderr)
        texts[f"{number}: mediagen {' '.join(argv)}"] = done.stdout + done.stderr
    said = "\n".join(texts.values())
    assert said.count("Invalid, expired, or revoked API key") >= 3
    assert said.count("UploadFailed") + said.count("cannot put voice.wav in s3://no-such-bucket/in") >= 2
    texts.update(files_under(tmp_path))
    assert leaks(secrets, texts) == []
