"""The sandbox: a faithful local emulator of the whole service, with real HTTP, credits and media.

It imports nothing from the client; the rules it shares with the client live in ``mediagen_nb.protocol``.
"""

from mediagen_nb.sandbox.accounts import DEMO_KEY
from mediagen_nb.sandbox.app import create_app
from mediagen_nb.sandbox.server import Sandbox
from mediagen_nb.sandbox.world import SandboxConfig

__all__ = ["DEMO_KEY", "Sandbox", "SandboxConfig", "create_app"]
