"""The Binder configuration: installs what pyproject.toml says, and its scripts are valid and executable.

(Starting the sandbox from ``binder/start`` for real is left to Binder; these checks run offline.)
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

BINDER = Path(__file__).resolve().parents[1] / "binder"
PYPROJECT = BINDER.parent / "pyproject.toml"


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_binder_requirements_install_every_dependency_of_the_project() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    lines = (BINDER / "requirements.txt").read_text(encoding="utf-8").splitlines()
    listed = {_name(line) for line in lines if line.strip() and not line.lstrip().startswith("#")}
    missing = {_name(d) for d in declared} - listed
    assert not missing, f"binder/requirements.txt lacks {sorted(missing)} (see pyproject.toml)"
    assert "matplotlib" in listed  # notebooks/03-cost-analysis.ipynb plots


@pytest.mark.parametrize("script", ["postBuild", "start"])
def test_binder_scripts_are_executable_bash(script: str) -> None:
    path = BINDER / script
    assert os.access(path, os.X_OK), f"chmod +x binder/{script}"
    assert path.read_text(encoding="utf-8").startswith("#!/bin/bash\n")
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    checked = subprocess.run([bash, "-n", str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr


def test_postbuild_installs_the_project() -> None:
    assert re.search(r"^pip install .*-e \.$", (BINDER / "postBuild").read_text(encoding="utf-8"), re.M)


def test_start_points_the_notebooks_at_a_background_sandbox_then_execs_jupyter() -> None:
    text = (BINDER / "start").read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert lines[-1] == 'exec "$@"'
    assert re.search(r"^mediagen sandbox --port 8765 --time-scale 30 .*&$", text, re.M)
    for name, value in {
        "MEDIAGEN_BASE_URL": '"http://127.0.0.1:8765"',
        "MEDIAGEN_API_KEY": '"pk_live_sandbox_demo_key"',
        "MEDIAGEN_TIME_SCALE": "30",
    }.items():
        assert f"export {name}={value}" in text
