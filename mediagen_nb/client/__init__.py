"""The client: every endpoint of the service, sync and async, polite to the limits, honest about money.

It imports neither pandas nor IPython; it uses the embedded sandbox when no key is configured.
"""

from mediagen_nb.client.clients import AsyncClient, BaseClient, Client
from mediagen_nb.client.config import ConfigurationError, Secret
from mediagen_nb.client.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    CapacityError,
    ConnectionFailed,
    GenerationError,
    GenerationFailed,
    GenerationTimedOut,
    InsufficientCreditsError,
    KeyCapReachedError,
    MediagenError,
    ModerationError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    ValidationError,
    WaitTimeout,
    WebhookError,
)
from mediagen_nb.client.inbox import WebhookInbox
from mediagen_nb.client.pacing import Limits
from mediagen_nb.client.resources import (
    Analysis,
    Blueprint,
    BlueprintBuild,
    Estimate,
    Generation,
    Model,
    Pricing,
    ReplicationRun,
    ShortVideoJob,
    VideoOptions,
)
from mediagen_nb.client.retry import RetryPolicy

__all__ = [
    "APIError",
    "Analysis",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "BaseClient",
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
]
