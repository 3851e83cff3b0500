"""The client: every endpoint of the service, sync and async, polite to the limits, honest about money.

It imports neither pandas nor IPython; it uses the embedded sandbox when no key is configured.
"""

from mediagen_nb.client.assemble import current, use
from mediagen_nb.client.balance import budget
from mediagen_nb.client.clients import AsyncClient, BaseClient, Client
from mediagen_nb.client.config import Secret
from mediagen_nb.client.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    BudgetExceeded,
    CapacityError,
    ConfigurationError,
    ConnectionFailed,
    DownloadFailed,
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
    ServiceResponseError,
    StartUncertain,
    UploadFailed,
    ValidationError,
    WaitTimeout,
    WebhookError,
    WorkFailed,
)
from mediagen_nb.client.html import Media
from mediagen_nb.client.inbox import WebhookInbox
from mediagen_nb.client.ledger import Ledger, LedgerError
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
from mediagen_nb.client.spending import BudgetStatus
from mediagen_nb.client.videos import VideoEstimate

__all__ = [
    "APIError",
    "Analysis",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "BaseClient",
    "Blueprint",
    "BlueprintBuild",
    "BudgetExceeded",
    "BudgetStatus",
    "CapacityError",
    "Client",
    "ConfigurationError",
    "ConnectionFailed",
    "DownloadFailed",
    "Estimate",
    "Generation",
    "GenerationError",
    "GenerationFailed",
    "GenerationTimedOut",
    "InsufficientCreditsError",
    "KeyCapReachedError",
    "Ledger",
    "LedgerError",
    "Limits",
    "Media",
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
    "ServiceResponseError",
    "ShortVideoJob",
    "StartUncertain",
    "UploadFailed",
    "ValidationError",
    "VideoEstimate",
    "VideoOptions",
    "WaitTimeout",
    "WebhookError",
    "WebhookInbox",
    "WorkFailed",
    "budget",
    "current",
    "use",
]
