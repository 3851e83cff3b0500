"""mediagen_nb: a hosted media-generation service as a first-class citizen of Jupyter and pandas.

Everything loads on first use (the client, the sandbox server, media encoders), so
``import mediagen_nb`` stays fast.
"""

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from mediagen_nb.client import *  # noqa: F403
    from mediagen_nb.sandbox import Sandbox as Sandbox
    from mediagen_nb.sandbox import SandboxConfig as SandboxConfig

_CLIENT_NAMES = (
    "APIError",
    "Analysis",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "Blueprint",
    "BlueprintBuild",
    "CapacityError",
    "Client",
    "ConfigurationError",
    "ConnectionFailed",
    "Estimate",
    "Generation",
    "GenerationError",
    "GenerationFailed",
    "GenerationTimedOut",
    "InsufficientCreditsError",
    "KeyCapReachedError",
    "Limits",
    "MediagenError",
    "Model",
    "ModerationError",
    "NotFoundError",
    "PermissionDeniedError",
    "Pricing",
    "RateLimitError",
    "ReplicationRun",
    "RetryPolicy",
    "Secret",
    "ServerError",
    "ShortVideoJob",
    "ValidationError",
    "VideoOptions",
    "WaitTimeout",
    "WebhookError",
    "WebhookInbox",
)
_LAZY = {name: "mediagen_nb.client" for name in _CLIENT_NAMES} | {
    "Sandbox": "mediagen_nb.sandbox",
    "SandboxConfig": "mediagen_nb.sandbox",
}

__all__ = [*_LAZY, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mediagen_nb' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
