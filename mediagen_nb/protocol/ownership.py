"""A local sandbox that answers its owner alone: the owner's secret, the tokens made from it, the proof.

The user's kept sandbox keeps a secret (``secret`` in its folder: 32 random bytes in hex, 0600 in a 0700
folder, made at its first start), readable by the user who started it and by no one else. The secret
itself never leaves the file; what goes on the wire is made from it with HMAC-SHA256, each under its
own label so no answer can stand in for another:

* :func:`proof`: the answer to a client's fresh challenge (``GET /_sandbox/hello?challenge=``), bound to
  the port the server listens on, the folder it serves and its boot id. Only a server holding the secret
  can make it, and one on another port cannot lend it (a squatter relaying the real sandbox's answer).
* :func:`session_token`: what every request carries (``X-Mediagen-Sandbox``), bound to the boot id, so a
  token a squatter saw after a crash is worth nothing once the sandbox starts again.
* :func:`agent_token`: the standing credential of an agent client (``mediagen mcp-config``), good for
  ``/mcp`` only, so a settings file that outlives restarts needs no new entry.
* :func:`demo_key`: the kept sandbox's demo key, which no one else can know (never the public one).

Pure functions and the secret file, nothing else: the server (``sandbox/guard.py``) and the client's
launcher (``sandbox/kept.py``) share them.
"""

import hashlib
import hmac
import os
import re
import secrets
import stat
from pathlib import Path

HEADER = "X-Mediagen-Sandbox"  # the owner's session token (or the agent token, at /mcp)
SECRET_FILE = "secret"
CHALLENGE = re.compile(r"[0-9a-f]{64}")  # what a client sends to be answered: 32 random bytes, hex
BOOT = re.compile(r"[0-9a-f]{32}")
PRIVATE_FILE, PRIVATE_FOLDER = 0o600, 0o700


class NotPrivate(OSError):
    """The secret or its folder belongs to another user, or others may read it: refused, never used."""


def new_challenge() -> str:
    return secrets.token_hex(32)


def new_boot() -> str:
    """A sandbox process's boot id: new at every start, so tokens of an earlier process die with it."""
    return secrets.token_hex(16)


def _mac(secret: bytes, label: str, *parts: object) -> str:
    message = "\n".join(["mediagen sandbox " + label, *map(str, parts)]).encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def proof(secret: bytes, challenge: str, port: int, folder: Path | str, boot: str) -> str:
    """What the owner's sandbox answers to ``challenge``, listening on ``port``, serving ``folder``."""
    return _mac(secret, "proof", challenge, port, str(folder), boot)


def session_token(secret: bytes, boot: str) -> str:
    """The token every request to the sandbox of boot ``boot`` carries."""
    return _mac(secret, "session", boot)


def agent_token(secret: bytes) -> str:
    """The standing token of the owner's agent clients: accepted at ``/mcp`` only."""
    return _mac(secret, "agent")


def demo_key(secret: bytes) -> str:
    """The owner's demo key: an API key of the sandbox that no one without the secret can know."""
    return "pk_live_sandbox_" + _mac(secret, "demo key")[:40]


def names_key(secret: bytes) -> bytes:
    """The key that names uploads and media, so no one can derive their URLs from their content."""
    return bytes.fromhex(_mac(secret, "names"))


def same(given: str | None, expected: str) -> bool:
    """Whether ``given`` is ``expected``, in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def private_folder(folder: Path) -> Path:
    """``folder`` made if missing, and readable by this user alone (0700); NotPrivate if another owns it."""
    folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
    _ours(folder)
    if stat.S_IMODE(folder.stat().st_mode) != PRIVATE_FOLDER:
        folder.chmod(PRIVATE_FOLDER)
    return folder


def private_tree(folder: Path) -> None:
    """Every file under ``folder`` 0600 and every folder 0700 (what an older version left more open);
    links are not followed, and what another user owns is left alone."""
    mine = os.getuid() if hasattr(os, "getuid") else None
    for root, folders, files in os.walk(folder):
        for name, mode in [(n, PRIVATE_FOLDER) for n in folders] + [(n, PRIVATE_FILE) for n in files]:
            path = Path(root) / name
            try:
                found = path.lstat()
                if stat.S_ISLNK(found.st_mode) or (mine is not None and found.st_uid != mine):
                    continue
                if stat.S_IMODE(found.st_mode) & ~mode:
                    path.chmod(mode)
            except OSError:
                continue  # gone meanwhile (a temporary file)


def read_secret(folder: Path) -> bytes | None:
    """The owner's secret kept in ``folder``, or None when there is none yet; NotPrivate when it or its
    folder is not the user's alone (it is then never used)."""
    path = folder / SECRET_FILE
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(descriptor, "rb") as file:
        found = os.fstat(file.fileno())
        if not stat.S_ISREG(found.st_mode):
            raise NotPrivate(f"{path} is not a file")
        _ours(folder)
        _ours(path, found)
        if stat.S_IMODE(found.st_mode) & 0o077:
            os.fchmod(file.fileno(), PRIVATE_FILE)
        text = file.read(200).decode("ascii", "replace").strip()
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        raise NotPrivate(f"{path} does not hold a secret (64 hex digits): delete it to make a new one")
    return bytes.fromhex(text)


def secret(folder: Path) -> bytes:
    """The owner's secret kept in ``folder``, made now (0600, in the folder made 0700) if there is none."""
    private_folder(folder)
    found = read_secret(folder)
    if found is not None:
        return found
    made = secrets.token_bytes(32)
    temp = folder / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    descriptor = os.open(
        temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), PRIVATE_FILE
    )
    with os.fdopen(descriptor, "w") as file:
        file.write(made.hex() + "\n")
    try:
        os.link(temp, folder / SECRET_FILE)  # never over one made meanwhile by another process
    except FileExistsError:
        pass
    except OSError:  # a file system without links
        if not (folder / SECRET_FILE).exists():
            os.replace(temp, folder / SECRET_FILE)
    finally:
        temp.unlink(missing_ok=True)
    found = read_secret(folder)
    assert found is not None
    return found


def _ours(path: Path, found: os.stat_result | None = None) -> None:
    if not hasattr(os, "getuid"):
        return  # Windows: the user's profile folder is the user's own
    owner = (found or path.stat()).st_uid
    if owner != os.getuid():
        raise NotPrivate(
            f"{path} belongs to another user (uid {owner}); a sandbox folder must be yours alone: "
            "use another data folder (XDG_DATA_HOME, or --data-dir)"
        )
