"""Ray and Daft against a sandbox served on 127.0.0.1, checked on the sandbox's own ledger.

The engines' processes (Ray's actors, Daft's UDF processes) are real processes that find the sandbox,
the ledger and the shared limits through their environment, as a user's workers would. Ray starts
once per module (about ten seconds); every test counts what its own rows were charged.
"""

import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from _engines import SCALE, SKIP, Service

from mediagen_nb.sandbox import Sandbox, SandboxConfig


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One sandbox at x60 for the module, with credits for every test of it."""
    with Sandbox(SandboxConfig(time_scale=SCALE, seed=5)) as sandbox:
        served = Service(sandbox, tmp_path_factory.mktemp("workers") / "ledger.sqlite")
        served.control("sandbox_account", {"balance": 100_000})
        yield served


@pytest.fixture(autouse=True)
def driver_env(service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test process is the driver: it reaches the sandbox as the workers do (an estimate runs here)."""
    for name, value in service.env().items():
        monkeypatch.setenv(name, value)


@pytest.fixture(scope="module")
def ray_cluster(service: Service) -> Iterator[Any]:
    """A local Ray (two CPUs, no dashboard) whose workers reach the module's sandbox; shut down after."""
    ray = pytest.importorskip("ray", reason=SKIP.format(extra="ray"))
    folder = tempfile.mkdtemp(prefix="mgray-")  # short: Ray's socket paths must fit 107 characters
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        options = {"num_cpus": 2, "include_dashboard": False, "_temp_dir": folder, "log_to_driver": False}
        for attempt in (1, 2):
            # Ray waits 30 s for its raylet to register (ray/_private/node.py); a loaded machine may miss
            # that ("The current node timed out during startup"): once more, its imports now cached.
            try:
                ray.init(runtime_env={"env_vars": service.env()}, **options)
                break
            except Exception:
                ray.shutdown()
                if attempt == 2:
                    shutil.rmtree(folder, ignore_errors=True)
                    raise
        try:
            yield ray
        finally:
            ray.shutdown()
            shutil.rmtree(folder, ignore_errors=True)
