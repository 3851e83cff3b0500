"""One exception hierarchy mirroring the spec's error table, plus the client's own failures.

Every error carries ``status`` (None when no response was read: refused here, before sending),
``message`` and ``retryable``. No error text ever includes the API key: messages come from the
service's body or from here, and any key-like text in them (a server echoing the Authorization
header) is masked by :func:`mask`. In a notebook each shows as one line, ``Name: message``, without the
library's frames (``_render_traceback_``, IPython's hook for that).

::

    MediagenError
    ├── ConfigurationError          where to connect, with which key, a malformed setting
    ├── BudgetExceeded              a start would pass the session budget (nothing sent)
    ├── StartUncertain              a start got no answer: possibly charged, resumable for free
    ├── ConnectionFailed            no (whole) response: refused, timed out, broken
    ├── ServiceResponseError        a response that is not what the spec says (a field, a size)
    ├── LedgerError                 the ledger file cannot be read or written (client.ledger)
    ├── DownloadFailed              an output could not be saved: gone, too large, not writable
    ├── UploadFailed                a local file could not be put in storage (no credentials shown)
    ├── APIError                    the service answered with an error status
    │   ├── BadRequestError         400
    │   │   ├── ValidationError     an input the schema refuses (status None: refused here)
    │   │   ├── ModerationError
    │   │   ├── InsufficientCreditsError
    │   │   └── WebhookError
    │   ├── AuthenticationError     401
    │   ├── PermissionDeniedError   403
    │   ├── NotFoundError           404
    │   ├── RateLimitError          429 (60 a minute on the key, or 60 starts on the account)
    │   ├── KeyCapReachedError      429 (the key's monthly cap)
    │   ├── ServerError             500
    │   └── CapacityError           503
    ├── GenerationError             a started generation ended ``failed``
    │   └── GenerationFailed
    │       └── GenerationTimedOut
    ├── WorkFailed                  an analysis, replica or topic-to-video job ended ``failed``
    └── WaitTimeout                 a client-side wait ran out; the job goes on
"""

import json
import re
from typing import TYPE_CHECKING, Any

from mediagen_nb.protocol import messages

if TYPE_CHECKING:
    from mediagen_nb.client.resources import Generation

# A key as the service writes it (``pk_live_`` and its secret), or any token after ``Bearer ``; the spec's
# own placeholder ``Bearer pk_live_...`` is left as it is.
_KEYS = re.compile(r"pk_live_[A-Za-z0-9_\-]+|(?<=[Bb]earer )(?!pk_live_\.\.\.)[^\s\"',;)]+")
# A text _KEYS can match holds one of these (a form added above needs its own here). str's search finds
# them at once; the regex, with no literal prefix, tries every position: 5.5 ms on the catalog's 136 kB.
_KEY_MARKS = ("pk_live_", "earer ")
MASKED = "pk_live_***"


def mask(text: str) -> str:
    """``text`` with every API key in it masked: for every message built from a server's words."""
    if not any(mark in text for mark in _KEY_MARKS):
        return text
    return _KEYS.sub(MASKED, text)


def _masked(body: Any) -> Any:
    """A response body with every key in its texts masked (kept on errors as ``body``)."""
    if isinstance(body, str):
        return mask(body)
    if isinstance(body, dict):
        return {mask(str(k)): _masked(v) for k, v in body.items()}
    if isinstance(body, list):
        return [_masked(item) for item in body]
    return body


class MediagenError(Exception):
    """Base of every error raised by mediagen_nb; its message never shows an API key."""

    status: int | None = None
    retryable: bool = False

    def __init__(self, message: str) -> None:
        message = mask(message)
        super().__init__(message)
        self.message = message

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of a traceback: one line, none of the library's frames."""
        return [f"{type(self).__name__}: {self}"]


class ConfigurationError(MediagenError):
    """The client cannot tell where to connect, with which key, or a setting is malformed."""


class BudgetExceeded(MediagenError):
    """A start would go past the session budget (``mediagen_nb.budget``); nothing was sent."""


class StartUncertain(MediagenError):
    """A start got no answer after every retry: the service may have accepted (and charged) it.

    Re-running the same start resumes it at no cost: it is in the ledger with its Idempotency-Key.
    """

    def __init__(self, message: str, *, key: str, credits: int | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.credits = credits  # what it may have cost, when known


class ServiceResponseError(MediagenError):
    """A response the spec does not allow: a field of the wrong type, a body over the size cap."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class APIError(MediagenError):
    """The service answered with an error status."""

    def __init__(self, status: int | None, message: str, *, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = _masked(body)

    def __str__(self) -> str:
        return f"{self.status} {self.message}" if self.status is not None else self.message


class BadRequestError(APIError):
    """400: an invalid request; retry only after fixing it."""


class ValidationError(BadRequestError):
    """400: an input the model's schema refuses. Raised before sending when the client can tell."""

    def __init__(
        self, message: str, *, field: str | None = None, sent: bool = True, body: Any = None
    ) -> None:
        super().__init__(400 if sent else None, message, body=body)
        self.field = field
        self.sent = sent  # False: refused by the client, no request made, nothing charged


class ModerationError(BadRequestError):
    """400: a prompt or image refused by content moderation; nothing was charged."""


class InsufficientCreditsError(BadRequestError):
    """400: the balance does not cover the price; ``needed`` and ``balance`` parsed from the message."""

    def __init__(self, status: int, message: str, *, body: Any = None) -> None:
        super().__init__(status, message, body=body)
        numbers = [int(n) for n in re.findall(r"(\d+) credits?", message)]
        balance = re.search(r"balance (?:is|was) (\d+)", message)
        self.needed: int | None = numbers[0] if numbers else None
        self.balance: int | None = int(balance.group(1)) if balance else None
        link = re.search(r"https?://\S+", message)
        self.top_up_url: str | None = link.group(0).rstrip(".") if link else None


class WebhookError(BadRequestError):
    """400: the webhook URL is refused (https, public host)."""


class AuthenticationError(APIError):
    """401: the key is missing, wrong, expired or revoked."""


class PermissionDeniedError(APIError):
    """403: the account is suspended, or the plan has no API access."""


class NotFoundError(APIError):
    """404: the generation, analysis, run, job or model is not in this account or catalog."""


class RateLimitError(APIError):
    """429: 60 requests a minute on the key (``scope == "key"``) or 60 starts on the account."""

    retryable = True

    def __init__(self, status: int, message: str, *, body: Any = None) -> None:
        super().__init__(status, message, body=body)
        self.scope = "account" if message.startswith(messages.TOO_MANY_GENERATIONS) else "key"


class KeyCapReachedError(APIError):
    """429: the key's Monthly credit cap is spent. Not retried: the cap resets at the next month."""

    def __init__(self, status: int, message: str, *, body: Any = None) -> None:
        super().__init__(status, message, body=body)
        found = re.search(r"\((\d+) credits\)", message)
        self.cap: int | None = int(found.group(1)) if found else None


class ServerError(APIError):
    """500: an unexpected server error; retried with backoff."""

    retryable = True


class CapacityError(APIError):
    """503: the model is at capacity; credits were refunded; retried with backoff."""

    retryable = True


class DownloadFailed(MediagenError):
    """An output could not be saved: its URL answered with an error, it is too large, or the file
    cannot be written. The generation itself is unharmed; saving it again costs nothing."""


class UploadFailed(MediagenError):
    """A local file could not be put where the service reads it (an fsspec store: S3, GCS, Azure).

    One line naming the destination and what failed; never the storage credentials, and never the
    storage library's traceback (whose locals hold them).
    """


class ConnectionFailed(MediagenError):
    """The connection failed or broke before a whole response arrived; retried (starts keep their key).

    ``sent`` is False when no connection could be opened: the request never left this machine.
    """

    retryable = True

    def __init__(self, message: str, *, sent: bool = True) -> None:
        super().__init__(message)
        self.sent = sent
        if not sent:
            self.retryable = False


class GenerationError(MediagenError):
    """A generation that started and then ended ``failed`` (its credits are refunded)."""

    def __init__(self, generation: "Generation") -> None:
        super().__init__(
            f"{generation.model_id} failed: {generation.error} "
            f"(generation {generation.id}; its credits were refunded)"
        )
        self.generation = generation


class GenerationFailed(GenerationError):
    """The model or platform failed the generation."""


class GenerationTimedOut(GenerationFailed):
    """The generation ran past its time limit (``Generation timed out``)."""


class WorkFailed(MediagenError):
    """An analysis, a replication run or a short-video job that ended ``failed`` (its credits refunded)."""

    def __init__(self, resource: Any) -> None:
        kind = {"Analysis": "the analysis", "ReplicationRun": "the replica", "ShortVideoJob": "the video"}
        what = kind.get(type(resource).__name__, type(resource).__name__)
        super().__init__(f"{what} failed: {resource.error} ({resource.id}; its credits were refunded)")
        self.resource = resource


class WaitTimeout(MediagenError):
    """A client-side wait ran out of time; the job goes on and can be read again by id."""

    def __init__(self, message: str, last: Any = None) -> None:
        super().__init__(message)
        self.last = last


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    429: RateLimitError,
    500: ServerError,
    503: CapacityError,
}
_BY_MESSAGE: list[tuple[int, str, type[APIError]]] = [
    (400, messages.PROMPT_MODERATED, ModerationError),
    (400, messages.IMAGE_MODERATED, ModerationError),
    (400, "Not enough credits", InsufficientCreditsError),
    (400, "webhook", WebhookError),
    (429, "API key monthly credit limit reached", KeyCapReachedError),
]
_VALIDATION_STARTS = (
    messages.INPUT_NOT_OBJECT,
    "Missing required field",
    messages.UNSUPPORTED_MEDIA_FORMAT,
    messages.UNREADABLE_VIDEO_DURATION,
)


MAX_MESSAGE = 4000  # characters of an error message kept (the catalog-wide "Available models" list fits)


def message_of(body: Any) -> str:
    """The spec's rule: a string body is the message, otherwise read ``message`` (keys masked)."""
    if isinstance(body, str):
        return mask(body)
    if isinstance(body, dict) and isinstance(message := body.get("message"), str):
        return mask(message)
    return mask(json.dumps(body)) if body is not None else ""


def from_response(status: int, raw: bytes) -> APIError:
    """The error for a non-2xx response, classified by status and the start of its message."""
    try:
        body: Any = json.loads(raw) if raw else None
    except (ValueError, RecursionError):  # not JSON, or nested past what Python parses: the raw text
        body = raw.decode(errors="replace")
    message = message_of(body) or f"HTTP {status}"
    if len(message) > MAX_MESSAGE:  # a proxy's HTML page, a body far longer than the spec's one line
        message = message[: MAX_MESSAGE - 1] + "…"
    for code, start, kind in _BY_MESSAGE:
        if status == code and message.startswith(start):
            return kind(status, message, body=body)
    if status == 400 and (
        message.startswith(_VALIDATION_STARTS)
        or " must be " in message
        or " must have " in message
        or message.endswith("URL is not reachable")
    ):
        named = re.match(r"(?:Missing required field: )?([\w\[\].]+)(?: must be| URL is)?", message)
        return ValidationError(message, field=named.group(1) if named else None, body=body)
    default = ServerError if status >= 500 else APIError
    error = _BY_STATUS.get(status, default)(status, message, body=body)
    if status >= 500:
        error.retryable = True
    return error


def failure_document(kind: str, message: str, exit: int) -> dict[str, Any]:
    """A failure as the one JSON document every ``mediagen`` command prints with ``--json``."""
    return {"ok": False, "error": {"type": kind, "message": message, "exit": exit}}
