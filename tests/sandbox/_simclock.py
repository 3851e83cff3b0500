"""A frozen simulated clock for sandbox tests that move time by hand."""

import pytest

from mediagen_nb.sandbox import Sandbox


class SimClock:
    """Stops the sandbox's simulated clock so a test moves it by hand (timers then change nothing)."""

    def __init__(self, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
        self.at = sandbox.world.clock.now()
        monkeypatch.setattr(sandbox.world.clock, "now", lambda: self.at)

    def to(self, moment: float) -> None:
        self.at = max(self.at, moment)
