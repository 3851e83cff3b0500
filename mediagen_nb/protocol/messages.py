"""The service's error messages, word for word from the spec's error table.

Where the spec gives only the start of a message, the rest is ours and is marked so.
"""

import difflib
from collections.abc import Iterable

from mediagen_nb.protocol import limits

STATUS_NAMES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}

MISSING_CREDENTIALS = "Missing credentials. Use: Authorization: Bearer pk_live_..."
INVALID_KEY = "Invalid, expired, or revoked API key"
SUSPENDED = "Your account has been suspended."
# The spec: "a message that API access is available on the Scale plan and asks for an upgrade".
PLAN_WITHOUT_API = "API access is available on the Scale plan. Please upgrade to create API keys."

KEY_RATE_LIMIT = "API key rate limit exceeded"
TOO_MANY_GENERATIONS = "Too many generations"

# The agent (MCP) server's (ours: the spec names the per-token limit, not its words).
TOKEN_RATE_LIMIT = "Access token rate limit exceeded"
INVALID_TOKEN = "Invalid or expired access token"
AGENT_NEEDS_SIGN_IN = (
    "This agent server takes OAuth access tokens, not API keys: sign in (mediagen sign-in) and use the token"
)
AGENT_NEEDS_EXTRA = (
    "The agent (MCP) server needs the MCP SDK: pip install 'mediagen-nb[agent]' and restart the sandbox"
)
AGENT_NOT_RUNNING = "The agent (MCP) server answers only on a served sandbox (Sandbox.start())"
AGENT_FAILED = "The agent (MCP) server could not load (reinstall 'mediagen-nb[agent]')"

INPUT_NOT_OBJECT = "input must be an object"
INVALID_GENERATION_ID = "Invalid generation id"
GENERATION_NOT_FOUND = "Generation not found"
UNSUPPORTED_MEDIA_FORMAT = "Unsupported media format"
UNREADABLE_VIDEO_DURATION = "Could not read the video duration"
PROMPT_MODERATED = "Prompt rejected by content moderation"
IMAGE_MODERATED = "Image rejected by content moderation"
AT_CAPACITY = "The model is at capacity"
SERVER_ERROR = "Internal server error"  # ours: the spec names only the status

WEBHOOK_HTTPS = "webhook must use https"
WEBHOOK_HOST = "webhook host is not allowed"
WEBHOOK_INVALID = "webhook must be a valid URL"  # ours, one of the spec's "other webhook ..."
WEBHOOK_UNRESOLVED = "webhook host could not be resolved"  # ours, likewise

URL_MUST_BE_HTTPS = "URL must be https"
UNSUPPORTED_LINK = "Use a TikTok / YouTube / Instagram link or a direct video URL"
PHOTO_POST = "That link is a photo post, not a video"
FLOW_NOT_READY = "Flow is not ready"
STILL_READING_SHOTS = "Still reading the shots"
CLIP_OUT_OF_RANGE = "Clip selection is out of range"
FLOW_NOT_FOUND = "Flow not found"
RUN_NOT_FOUND = "Run not found"
JOB_NOT_FOUND = "Job not found"  # ours: the topic-to-video error table is not shown

GENERATION_TIMED_OUT = "Generation timed out"  # start of the failed generation's error


def _listing(items: Iterable[str]) -> str:
    return ", ".join(items)


def unknown_model(model_id: str, available: Iterable[str]) -> str:
    return f"Unknown model '{model_id}'. Available models: {_listing(available)}"


def model_not_served(model_id: str, why: str) -> str:
    """Ours: a model a sandbox's catalog snapshot lists but the sandbox cannot run, and why."""
    return f"Model '{model_id}' is in this sandbox's catalog snapshot but {why}; correct it or sync again"


def model_not_found(available: Iterable[str]) -> str:
    return f"Model not found. Available models: {_listing(available)}"


def missing_field(field: str) -> str:
    return f"Missing required field: {field}"


def not_one_of(field: str, options: Iterable[object]) -> str:
    return f"{field} must be one of: {_listing(str(o) for o in options)}"


def credits(count: object) -> str:
    """Ours: a number of credits as words say it, ``1 credit``, ``25 credits``."""
    return f"{count} credit" if count in (1, -1) or str(count) in ("1", "-1") else f"{count} credits"


def nearest_option(value: object, options: Iterable[object]) -> str:
    """Ours, after the service's enum message: ``; did you mean low?`` for ``Low``, `` low `` or ``lwo``."""
    folded = {str(o).strip().casefold(): str(o) for o in options}
    found = difflib.get_close_matches(str(value).strip().casefold(), list(folded), n=1)
    return f"; did you mean {folded[found[0]]}?" if found else ""


def unsupported_media_format(field: str) -> str:
    """The service's start, then ours: which input, and what it takes."""
    allowed = ", ".join(limits.LENGTH_BILLED_EXTENSIONS)
    return f"{UNSUPPORTED_MEDIA_FORMAT}: {field} must be a {allowed} URL (its length sets the price)"


def wrong_type(field: str, expected: str) -> str:
    """Ours: the spec validates against the schema but shows no type message."""
    return f"{field} must be {expected}"


def did_you_mean(name: str, options: Iterable[str], written: str = "{}") -> str:
    """Ours, the one "did you mean" of the toolkit: ``; did you mean quality?`` with the option nearest
    to a mistyped ``name`` (shown as ``written``, e.g. ``"--{}"``), or "" when none is near."""
    found = difflib.get_close_matches(name, list(options), n=1)
    return f"; did you mean {written.format(found[0])}?" if found else ""


def no_such_model(model_id: str, ids: list[str], listing: str) -> str:
    """Ours: an unknown model id in one short line with the nearest id, not the catalog's every id."""
    return f"Model not found: {model_id!r}{did_you_mean(model_id, ids)} ({listing} lists all {len(ids)})"


def not_an_input(field: str, model_id: str, inputs: Iterable[str]) -> str:
    """Ours: an input name the model's schema does not have, with the nearest one."""
    return f"{field}: not an input of {model_id}{did_you_mean(field, inputs)}"


def out_of_range(field: str, minimum: object | None, maximum: object | None) -> str:
    """Ours, for a schema's minimum/maximum."""
    if minimum is not None and maximum is not None:
        return f"{field} must be between {minimum} and {maximum}"
    if minimum is not None:
        return f"{field} must be at least {minimum}"
    return f"{field} must be at most {maximum}"


def too_long(field: str, max_length: int) -> str:
    """Ours, for a schema's maxLength (chatterbox-turbo's 500, speech-02's 10,000 characters)."""
    return f"{field} must be at most {max_length} characters"


def too_many_items(field: str, max_items: int) -> str:
    """Ours, for a schema's maxItems."""
    return f"{field} must have at most {max_items} items"


def too_few_items(field: str, min_items: int) -> str:
    """Ours, for a schema's minItems."""
    return f"{field} must have at least {min_items} item" + ("" if min_items == 1 else "s")


def media_not_reachable(field: str) -> str:
    """The spec's ``audio URL is not reachable``, named after the field that failed."""
    return f"{field} URL is not reachable"


def media_too_short(field: str, seconds: float) -> str:
    """Ours, for chatterbox-turbo's "reference audio longer than 5 seconds"."""
    return f"{field} must be longer than {seconds:g} seconds"


def unreadable_audio_duration() -> str:
    """Ours: the spec names only the video case."""
    return "Could not read the audio duration"


def not_enough_credits(needed: int, balance: int, top_up_url: str) -> str:
    return (
        f"Not enough credits: this run needs {needed} credits and your balance is {balance}. "
        f"Top up at {top_up_url}"
    )


def key_cap_reached(cap: int) -> str:
    return f"API key monthly credit limit reached ({cap} credits)."


def video_too_long(seconds: float) -> str:
    return f"That video is {seconds:.0f} seconds long; the limit is two minutes"


def unknown_replication_model(available: Iterable[str]) -> str:
    return f"Unknown replication model. Use one of: {_listing(available)}"


def generation_timed_out(minutes: float) -> str:
    return f"{GENERATION_TIMED_OUT} after {minutes:g} minutes; credits refunded"


def job_out_of_credits(needed: int, balance: int) -> str:
    """The spec: a topic-to-video job out of credits fails with the credits it needed."""
    return (
        f"Not enough credits: the video needed {needed} more credits and the balance was {balance}; "
        "credits used were refunded"
    )


# Ours: POST {topic-to-video root}/{jobId}/reedit on a job without a paid-for lip-sync.
REEDIT_NEEDS_LIPSYNC = "Re-edit needs a job that already has its lip-sync video"


# Ours: bodies and query values the service refuses before reading them (400).
BODY_NOT_JSON = "Request body must be valid JSON"
BODY_NOT_OBJECT = "Request body must be a JSON object"
BODY_NOT_TEXT = "Request body must be valid JSON text: a string holds a lone surrogate"
FILE_NOT_FOUND = "File not found"


def not_a_header_value(field: str, problem: str) -> str:
    """Ours: an Idempotency-Key (header, body or tool argument) no HTTP header could carry."""
    return f"{field} has {problem}; use letters, digits and -_.: (ASCII only)"


def body_not_json(reason: str) -> str:
    return f"{BODY_NOT_JSON} ({reason})"


def body_too_deep(levels: int) -> str:
    return f"Request body is nested more than {levels} levels deep"


def body_too_large(limit: int) -> str:
    """Ours (413): a JSON body past the cap, refused before it is read whole; nothing is charged."""
    return f"Request body is too large: at most {limit:,} bytes of JSON; send media as URLs, not in the body"


def wait_out_of_range(minimum: int, maximum: int) -> str:
    return f"wait must be an integer from {minimum} to {maximum} seconds"


# Ours: the ``error`` of work that started and failed later (credits refunded), by what failed.
MODEL_FAILED = "Model failed"
ANALYSIS_FAILED = "Analysis failed: the video could not be read; credits refunded"
ANALYSIS_TIMED_OUT = "Analysis timed out"


def model_failed(model_name: str) -> str:
    return f"{MODEL_FAILED}: {model_name} could not produce an output; credits refunded"


SEND_AN_IMAGE = "send a PNG, JPEG, WebP or GIF, or an SVG that draws"


def image_unreadable(field: str, what: str) -> str:
    """The sandbox's refusal of an image link its models could not read (the spec gives none)."""
    return f"{field} cannot be read as an image: it is {what} ({SEND_AN_IMAGE})"


def image_not_seen(model_name: str, why: str) -> str:
    """The sandbox's words for a run whose image input its model could not read (``why``: which, and
    what it is); the spec gives none."""
    return f"{MODEL_FAILED}: {model_name} could not read {why} ({SEND_AN_IMAGE}); credits refunded"


def analysis_timed_out(minutes: float) -> str:
    return f"{ANALYSIS_TIMED_OUT} after {minutes:g} minutes; credits refunded"


def clip_failed(clips: str, reason: str) -> str:
    return f"Clip {clips} failed: {reason}"


def clip_model_failed(model_name: str) -> str:
    return f"{model_name} could not render it; its credits were refunded"


def job_step_failed(step: str, cause: str) -> str:
    return f"The {step} step failed ({cause}); every credit the job used was refunded"


# Ours: why POST .../blueprint did not start a build (``started: false`` with this ``reason``).
BLUEPRINT_ANALYZING = "The analysis is still running; poll it until it is ready"
BLUEPRINT_ANALYSIS_FAILED = "The analysis failed, so there is no shot list to build from"
BLUEPRINT_BUILDING = "The blueprint is already being built"
BLUEPRINT_BUILT = "The blueprint is already built"
