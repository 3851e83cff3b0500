"""Small things several test modules need: a WAV of quiet sound, a free loopback port, an S3 server,
``mediagen`` run in a process of its own with a newcomer's environment, a snippet in a fresh Python, and
a redis-server on loopback.

Importable from any test module (``from _shared import wav``), as ``_hostile.py`` is.
"""

import io
import os
import shutil
import socket
import subprocess
import sys
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _wait import wait_until


def wav(seconds: float) -> bytes:
    """A real WAV file of ``seconds`` of quiet sound (8 kHz, mono, 16-bit): media any length meter reads."""
    out = io.BytesIO()
    with wave.open(out, "wb") as sound:
        sound.setnchannels(1)
        sound.setsampwidth(2)
        sound.setframerate(8000)
        sound.writeframes(b"\x01\x00" * int(8000 * seconds))
    return out.getvalue()


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def environment(**settings: str) -> dict[str, str]:
    """This process's environment without any ``MEDIAGEN_`` variable (a newcomer's), with ``settings``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("MEDIAGEN_")}, **settings}


def run_mediagen(
    *argv: str, env: dict[str, str], cwd: Path, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``mediagen ARGV`` in a process of its own; a Python traceback in what it printed fails the test."""
    done = subprocess.run(
        [sys.executable, "-m", "mediagen_nb.cli", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def fresh_python(code: str, cwd: Path | None = None) -> str:
    """What ``code`` printed, run in a fresh interpreter (what it imports, from nothing); it must exit 0."""
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextmanager
def moto_s3() -> Iterator[str]:
    """A real S3-compatible server (moto) on a free loopback port, with no bucket: its endpoint URL.

    The test is skipped when moto's server or s3fs is not installed. Where local files go is reset after.
    """
    server_mode = pytest.importorskip(
        "moto.server", reason="moto (with flask) is not installed: pip install -e '.[dev]'"
    )
    pytest.importorskip("s3fs", reason="s3fs is not installed")
    from mediagen_nb.client import uploads

    port = unused_port()
    server = server_mode.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        uploads.uploads(None)
        server.stop()


def start_redis(port: int, folder: Path) -> subprocess.Popen[bytes]:
    """A redis-server at ``port`` on loopback (nothing saved), listening; skips where there is none."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (.ci/run installs it with apt-get)")
    process = subprocess.Popen(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def listening() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            return False

    try:
        wait_until(listening, 10, "redis-server to listen")
    except AssertionError:
        process.kill()
        raise
    return process
