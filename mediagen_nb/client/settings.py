"""Every ``MEDIAGEN_*`` variable the toolkit reads, and its default: read here and nowhere else.

As moto's ``settings.py``: each setting is a function that reads the environment when it is asked
(a notebook may set a variable after import, a test per test), checks the value, and falls back to
its default. The names the sandbox also writes (to point a process at itself) are the protocol's.
"""

import functools
import math
import os
from pathlib import Path

from mediagen_nb.client.errors import ConfigurationError
from mediagen_nb.protocol.environment import ENV_BASE_URL, ENV_KEY, ENV_TIME_SCALE, ENV_WIRE

__all__ = [
    "ENV_ACCOUNT",
    "ENV_AGENT_TOKEN",
    "ENV_BASE_URL",
    "ENV_BUDGET",
    "ENV_KEY",
    "ENV_LEDGER",
    "ENV_LIMITS_URL",
    "ENV_MARKETING_WAIT",
    "ENV_MCP_URL",
    "ENV_PREVIEW",
    "ENV_TIME_SCALE",
    "ENV_UPLOAD_URL",
    "ENV_WIRE",
]

ENV_ACCOUNT = "MEDIAGEN_ACCOUNT"  # names the account of the keys, for its shared start limit
ENV_LEDGER = "MEDIAGEN_LEDGER"  # the ledger file of paid starts
ENV_BUDGET = "MEDIAGEN_BUDGET"  # the session budget, in credits
ENV_PREVIEW = "MEDIAGEN_PREVIEW"  # where previews load a sandbox's media from: auto, direct, proxy, inline
ENV_UPLOAD_URL = "MEDIAGEN_UPLOAD_URL"  # where local files go: an fsspec URL
ENV_LIMITS_URL = "MEDIAGEN_LIMITS_URL"  # where the limiters' windows are shared: a file, or Redis
ENV_MARKETING_WAIT = "MEDIAGEN_MARKETING_WAIT"  # service seconds a replica's wait gives its marketing cuts
ENV_MCP_URL = "MEDIAGEN_MCP_URL"  # the service's agent (MCP) server, the spec's {mcp_url} (not shown)
ENV_AGENT_TOKEN = "MEDIAGEN_AGENT_TOKEN"  # an OAuth access token for it, where it takes no API key
HUB_PREFIX = "JUPYTERHUB_SERVICE_PREFIX"  # set by JupyterHub and Binder: the Jupyter server's path
COLAB_RELEASE = "COLAB_RELEASE_TAG"  # set by Google Colab in its runtimes

EMBEDDED_TIME_SCALE = 30.0  # the embedded sandbox: a 30-second image takes a second
SERVICE_TIME_SCALE = 1.0  # a service at MEDIAGEN_BASE_URL runs in real time unless told otherwise
PREVIEW_MODES = ("auto", "direct", "proxy", "inline")
MARKETING_WAIT = 60.0  # the cuts "may arrive slightly after the run is done" (the sandbox: 8 s)


def _text(name: str) -> str | None:
    """The variable's value, or None when it is unset or empty."""
    return os.environ.get(name) or None


def api_key() -> str | None:
    """``MEDIAGEN_API_KEY``: a key, or several keys of one account separated by commas (a pool)."""
    return _text(ENV_KEY)


def base_url() -> str | None:
    return _text(ENV_BASE_URL)


def account() -> str | None:
    return _text(ENV_ACCOUNT)


def time_scale() -> float | None:
    """``MEDIAGEN_TIME_SCALE``: the clock of the sandbox at MEDIAGEN_BASE_URL, or of the embedded one."""
    raw = _text(ENV_TIME_SCALE)
    if raw is None:
        return None
    try:
        scale = float(raw)
    except ValueError:
        raise ConfigurationError(f"{ENV_TIME_SCALE} must be a positive number, not {raw!r}") from None
    if not 0 < scale < math.inf:  # also refuses nan and inf
        raise ConfigurationError(f"{ENV_TIME_SCALE} must be a positive number, not {raw!r}")
    return scale


def marketing_wait() -> float:
    """``MEDIAGEN_MARKETING_WAIT``: service seconds ``wait_replication`` waits past ``done`` for the
    marketing cuts (default 60; 0 returns at ``done``)."""
    raw = _text(ENV_MARKETING_WAIT)
    if raw is None:
        return MARKETING_WAIT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < math.inf:
        raise ConfigurationError(f"{ENV_MARKETING_WAIT} must be 0 or more seconds, not {raw!r}")
    return seconds


def ledger_path() -> Path:
    """``MEDIAGEN_LEDGER``, else ``ledger.sqlite`` in the user's data folder (one per user, every process)."""
    configured = _text(ENV_LEDGER)
    if configured:
        return Path(configured).expanduser()
    homes = ("HOME", "XDG_DATA_HOME", "APPDATA", "LOCALAPPDATA")  # what platformdirs' answer depends on
    return _data_folder(*(os.environ.get(name) for name in homes)) / "ledger.sqlite"


@functools.lru_cache(maxsize=8)
def _data_folder(*homes: str | None) -> Path:
    """The user's data folder for mediagen_nb, kept for each value of the variables it depends on: asked
    for at every read that reaches the ledger, it took a third of a millisecond."""
    from platformdirs import user_data_path

    return user_data_path("mediagen_nb")


def credits(value: object, name: str) -> int:
    """A number of credits as the user gave it (``500``, ``"500"``); ConfigurationError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigurationError(f"{name} must be a whole number of credits, not {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise ConfigurationError(f"{name} must be a whole number of credits, not {value!r}") from None
    if number < 0:
        raise ConfigurationError(f"{name} must be 0 or more credits, not {number}")
    return number


def budget() -> int | None:
    """``MEDIAGEN_BUDGET``: the session budget a process starts with (none by default)."""
    raw = _text(ENV_BUDGET)
    return None if raw is None else credits(raw, ENV_BUDGET)


def preview() -> str:
    """``MEDIAGEN_PREVIEW``, one of PREVIEW_MODES; ``auto`` when unset or not one of them."""
    mode = os.environ.get(ENV_PREVIEW, "auto").strip().lower()
    return mode if mode in PREVIEW_MODES else "auto"


def hub_prefix() -> str | None:
    """The Jupyter server's path on JupyterHub and Binder (``/user/name/``), or None elsewhere."""
    return _text(HUB_PREFIX)


def wire_path() -> str | None:
    """``MEDIAGEN_WIRE``: a names file with the service's spelling of the names the spec does not show."""
    return _text(ENV_WIRE)


def on_colab() -> bool:
    """True in a Google Colab runtime (it sets ``COLAB_RELEASE_TAG``), whose browser cannot reach the
    runtime's 127.0.0.1: a sandbox's previews are inlined there."""
    return _text(COLAB_RELEASE) is not None


def upload_url() -> str | None:
    return _text(ENV_UPLOAD_URL)


def mcp_url() -> str | None:
    return _text(ENV_MCP_URL)


def agent_token() -> str | None:
    return _text(ENV_AGENT_TOKEN)


def limits_url() -> str:
    """``MEDIAGEN_LIMITS_URL``: a file, ``redis://``, or ``memory``; "" for the machine's file."""
    return os.environ.get(ENV_LIMITS_URL, "")


def limits_path() -> Path:
    """The machine's file of shared limit windows: in the user's cache folder."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("mediagen_nb")) / "limits.sqlite"
