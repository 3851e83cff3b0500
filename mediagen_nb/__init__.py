"""mediagen_nb: a hosted media-generation service as a first-class citizen of Jupyter and pandas.

Heavy parts (the sandbox server, media encoders) load on first use, so ``import mediagen_nb`` is fast.
"""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from mediagen_nb.sandbox import Sandbox, SandboxConfig

_LAZY = {"Sandbox": "mediagen_nb.sandbox", "SandboxConfig": "mediagen_nb.sandbox"}

__all__ = ["Sandbox", "SandboxConfig", "__version__"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mediagen_nb' has no attribute {name!r}")
