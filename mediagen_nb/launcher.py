"""The embedded sandbox's launcher: how the client starts the user's kept sandbox (``sandbox.kept``).

The client imports no sandbox; it asks the :class:`~mediagen_nb.client.config.Launcher` registered
with its assembler. ``import mediagen_nb`` registers this one as the assembler loads, and the sandbox
itself loads only when a connection with no key first needs it.
"""

from pathlib import Path

from mediagen_nb.client import assemble
from mediagen_nb.client.errors import ConnectionFailed


class KeptLauncher:
    """Finds or starts the user's kept sandbox (:mod:`mediagen_nb.sandbox.kept`)."""

    def find(self, data_dir: Path | None = None) -> "assemble.Running | None":
        from mediagen_nb.sandbox import kept

        return kept.find(data_dir)

    def ensure(self, time_scale: float, data_dir: Path | None = None) -> "assemble.Running":
        """The kept sandbox, found or started; a failure to start is one ConnectionFailed naming its log."""
        from filelock import Timeout

        from mediagen_nb.sandbox import kept

        try:
            return kept.ensure(time_scale, data_dir)
        except (kept.KeptSandboxError, Timeout, OSError) as exc:
            raise ConnectionFailed(f"cannot start the embedded sandbox: {exc}", sent=False) from None


assemble.register_launcher(KeptLauncher())
