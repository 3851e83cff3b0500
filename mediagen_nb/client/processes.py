"""Which process wrote a ledger row, and whether it still runs.

A start's intent is written by one process before it sends; until the service answers, the row is that
process's start in flight, unless the process is gone (a killed kernel): then nobody will send it, and
whoever resumes it sends it. A process is named by its machine, its pid and the moment it started, so
a pid the system hands out again names another process. Where that moment cannot be read (no
``/proc``), the pid alone is asked; on another machine, or where nothing can be asked, a writer is
taken to be running (its start is counted there, never twice here).
"""

import os
import socket
from functools import cache

THIS, GONE, RUNNING = "this process", "gone", "running"


@cache
def _boot() -> str:
    """This machine's boot (Linux), so a moment since boot is never compared across a reboot."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as file:
            return file.read().strip()
    except OSError:
        return ""


def _started(pid: int) -> str | None:
    """When process ``pid`` started, as ``boot-ticks`` (Linux); None when it does not run or is unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return None
    fields = stat.rsplit(b")", 1)[-1].split()  # after the command name, which may hold spaces
    return f"{_boot()}-{fields[19].decode()}" if len(fields) > 19 else None  # field 22: starttime


def _proc() -> bool:
    return os.path.isdir("/proc/self")


@cache
def _named(pid: int) -> str:
    return f"{socket.gethostname()}/{pid}/{_started(pid) or ''}"


def me() -> str:
    """This process's name in the ledger (``host/pid/start``); a forked child gets its own."""
    return _named(os.getpid())


def whose(owner: str | None) -> str:
    """THIS (this process wrote it), GONE (its writer has ended) or RUNNING (it runs, or cannot be told:
    another machine, a row of a ledger from before writers were named)."""
    if owner is None:
        return RUNNING
    if owner == me():
        return THIS
    host, _, rest = owner.partition("/")
    pid_text, _, started = rest.partition("/")
    if host != socket.gethostname() or not pid_text.isdigit():
        return RUNNING
    pid = int(pid_text)
    if _proc():
        return RUNNING if started and _started(pid) == started else GONE
    if os.name != "posix":  # os.kill would end the process there, not ask about it
        return RUNNING
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return GONE
    except OSError:  # another user's process: it runs
        return RUNNING
    return RUNNING
