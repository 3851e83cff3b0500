"""``%mediagen usage`` in a second kernel counts what a first kernel spent, over every path.

Two processes, each an IPython shell with ``%load_ext mediagen_nb`` on the user's kept sandbox (the test's
own data folder), share one ledger file (``MEDIAGEN_LEDGER``), as two kernels of one user do. The first
spends through every path (a magic, a form, a sweep, a direct call, ``%replicate``, ``%%make_video``) and
prints the sandbox's own ledger; the second, started afterwards, shows ``%mediagen usage``.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _shared import environment

ROOT = Path(__file__).resolve().parents[2]
FIRST = textwrap.dedent(
    """
    import json

    import httpx
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "mediagen_nb")


    def ok(source):
        result = shell.run_cell(source, silent=True)
        assert result.success, result.error_in_exec or result.error_before_exec


    ok("%%generate gpt-image-2 --quality low\\na fox in the snow")
    ok("import mediagen_nb as mg\\nmg.form('flare-1-swift').set(prompt='a hare').submit()")
    ok("import pandas as pd\\ndf = pd.DataFrame({'prompt': ['a', 'b']})")
    ok("df.mediagen.run('flare-1-swift', progress=False)")
    ok("mg.current().generate('flare-1-swift', prompt='a direct call')")
    ok("%replicate https://www.tiktok.com/@x/video/1 --clips 0 --quality low")
    ok("%%make_video --seconds 20\\nwhy owls turn their heads")
    ok("%%generate flare-1-swift\\na fox in the snow")
    ok("%%generate flare-1-swift\\na fox in the snow")  # a re-run: reused, not charged
    import mediagen_nb as mg

    entries = mg.current().sandbox_control("GET", "ledger")["entries"]
    print(json.dumps([[e["kind"], e["resource"], e["credits"]] for e in entries]))
    """
)
SECOND = textwrap.dedent(
    """
    import json

    from IPython.core.interactiveshell import InteractiveShell

    import mediagen_nb as mg

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "mediagen_nb")
    table = shell.run_line_magic("mediagen", "usage")
    frame = mg.usage()
    rows = [list(map(str, row)) for row in table.rows()]
    print(json.dumps({"rows": rows, "frame": frame.to_dict("records")}))
    """
)


def run(script: str, tmp_path: Path, ledger: Path) -> str:
    env = environment(
        MEDIAGEN_LEDGER=str(ledger),
        MEDIAGEN_TIME_SCALE="600",
        IPYTHONDIR=str(tmp_path / "ipython"),
        PYTHONPATH=str(ROOT),
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.timeout(300)
def test_usage_in_a_second_kernel_counts_every_path_of_the_first(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    entries = json.loads(run(FIRST, tmp_path, ledger))
    net: dict[str, int] = {}
    for kind, resource, credits in entries:
        net[resource] = net.get(resource, 0) + (credits if kind == "charge" else -credits)
    shown = json.loads(run(SECOND, tmp_path, ledger))
    frame = shown["frame"]
    by_via = {(row["via"], row["model"]): row for row in frame if row["model"] != "total"}
    assert set(via for via, _ in by_via) == {
        "magic",
        "form",
        "sweep",
        "call",
        "replication",
        "topic-to-video",
    }
    assert by_via[("magic", "gpt-image-2")]["runs"] == 1 and by_via[("magic", "flare-1-swift")]["runs"] == 1
    assert by_via[("sweep", "flare-1-swift")]["runs"] == 2
    # charges, every one: the job's reads report its credits, and a sandbox reports a replica's (the
    # run resource has none) from its own ledger once the run ends; no row is an estimate
    assert all(row["note"] == "" for row in frame)
    [replica] = [row for row in frame if row["via"] == "replication" and row["model"] != "analysis"]
    assert replica["credits"] == net["replication"] > 0
    total = next(row for row in frame if row["model"] == "total")
    assert total["credits"] == sum(net.values())
    assert total["runs"] == sum(row["runs"] for row in by_via.values())
    assert shown["rows"][-1][0].startswith("total ") and "embedded sandbox" in shown["rows"][-1][0]
