"""Behaviour over time runs on the manual clock, not sleeps (the brief; issue 36 item 4).

Read from the tests' source: in the sandbox, client and batch tests a sleep of more than nothing says on
its line why real time must pass (``# real: <why>``: another thread, process or server is at work), and
no sandbox test holds time still with a real-time clock (``time_scale=1``) where the manual clock
(``@pytest.mark.manual_clock``, tests/conftest.py) does it exactly.
"""

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
FOLDERS = ("sandbox", "client", "batch")
WALL = {"time", "asyncio"}  # time.sleep, asyncio.sleep (a clock's sleep is the clock's business)
REAL_TIME_SANDBOX = re.compile(r"time_scale\s*=\s*1(\.0*)?\b(?!\d|\.\d)")


def _files(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (TESTS / folder).rglob("*.py"))


def _wall_sleep(call: ast.Call) -> bool:
    """``time.sleep(...)``, ``asyncio.sleep(...)`` or a bare ``sleep(...)`` imported from either."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr == "sleep" and isinstance(func.value, ast.Name) and func.value.id in WALL
    return isinstance(func, ast.Name) and func.id == "sleep"


def _nothing(call: ast.Call) -> bool:
    """``sleep(0)``: one turn of the loop, no time."""
    return len(call.args) == 1 and isinstance(call.args[0], ast.Constant) and call.args[0].value == 0


def unexplained_sleeps(source: str) -> list[int]:
    """Lines of ``source`` that sleep for more than nothing without ``# real:`` saying why."""
    if "sleep(" not in source:
        return []
    lines = source.splitlines()
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and _wall_sleep(node) and not _nothing(node)
        if "# real:" not in lines[node.lineno - 1]
    ]


def test_a_test_sleeps_only_for_what_real_time_settles() -> None:
    found = {
        f"{path.relative_to(TESTS)}:{line}": path.read_text().splitlines()[line - 1].strip()
        for path in _files(*FOLDERS)
        for line in unexplained_sleeps(path.read_text())
    }
    assert not found, (
        "a test about time moves the manual clock instead of sleeping (@pytest.mark.manual_clock, "
        "sandbox.advance); a sleep for real work elsewhere says so: `# real: <why>`",
        found,
    )


def test_no_sandbox_test_holds_time_still_with_a_real_time_clock() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{number}"
        for path in _files("sandbox")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if REAL_TIME_SANDBOX.search(line)
    ]
    assert not found, ("use the manual clock (@pytest.mark.manual_clock) instead of time_scale=1", found)


def test_the_checks_see_what_they_look_for() -> None:
    """Each check finds its case (so a change in how the tests are read cannot make them pass vacuously)."""
    source = "import time\ntime.sleep(0.5)\nasyncio.sleep(0)\nsleep(2)  # real: a server\nclock.sleep(9)\n"
    assert unexplained_sleeps(source) == [2]
    assert unexplained_sleeps("await asyncio.sleep(POLL)\n") == [1]
    assert REAL_TIME_SANDBOX.search("Sandbox(SandboxConfig(time_scale=1, seed=1))")
    assert REAL_TIME_SANDBOX.search("SandboxConfig(time_scale=1.0)")
    assert not REAL_TIME_SANDBOX.search("SandboxConfig(time_scale=100_000)")
    assert not REAL_TIME_SANDBOX.search("SandboxConfig(time_scale=10)")
    assert not REAL_TIME_SANDBOX.search("SandboxConfig(time_scale=1.5)")
