"""What the engine tests share: the module's served sandbox, read on its own ledger."""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from mediagen_nb.client import settings
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox

# Where Ray or Daft is not installed (the dev environment), these tests say where they run instead.
SKIP = (
    "the [{extra}] extra is not installed here: .ci/run runs tests/engines in .venv-engines (docs/engines.md)"
)
SCALE = 60.0  # a service minute is a real second: a window of the limits is 1 s, a 5-second image 0.08 s
MODEL = "flare-1-swift"  # 1 credit a run, flat price, about 5 s


@dataclass
class Service:
    """The served sandbox of a module, with what a test reads of it."""

    sandbox: Sandbox
    ledger: Path  # the workers' ledger (each worker writes the one it can reach: here, one file)

    @property
    def base_url(self) -> str:
        assert self.sandbox.base_url is not None
        return self.sandbox.base_url

    def control(self, name: str, body: dict[str, Any] | None = None) -> Any:
        url = self.base_url + path(name)
        with httpx.Client(timeout=30) as http:
            response = http.post(url, json=body) if body is not None else http.get(url)
        assert response.is_success, response.text
        return response.json()["data"]

    def charged(self) -> int:
        """Credits charged less credits refunded, since the sandbox started."""
        entries = self.control("sandbox_ledger")["entries"]
        return sum(e["credits"] * (1 if e["kind"] == "charge" else -1) for e in entries)

    def counts(self) -> dict[str, int]:
        return dict(self.control("sandbox_info")["counts"])

    def env(self) -> dict[str, str]:
        """What a worker needs: the sandbox, its key and clock, the ledger and the session's shared limits."""
        return {
            **self.sandbox.client_env(),
            settings.ENV_LEDGER: str(self.ledger),
            settings.ENV_LIMITS_URL: os.environ[settings.ENV_LIMITS_URL],
        }


DOCS = Path(__file__).resolve().parents[2] / "docs" / "engines.md"


def docs_example(heading: str) -> str:
    """The first Python block under ``## heading`` of docs/engines.md, exactly as the page shows it."""
    section = DOCS.read_text(encoding="utf-8").split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("```", 1)[0]
