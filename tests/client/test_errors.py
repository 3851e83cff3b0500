"""The error hierarchy (``client/errors.py``): each answer of the spec's error table becomes its class,
with what a caller acts on (retryable or not, the credits needed, the cap, whose limit) read from it.

Money rides on these: a 429 of the key's cap must not be retried, a 503 must be, a refusal must say
what to fix. Every case here is a body as the service (or a proxy in front of it) sends it.
"""

import json
from typing import Any

import pytest

from mediagen_nb.client import Generation, ReplicationRun, ShortVideoJob, errors
from mediagen_nb.client.errors import (
    MASKED,
    MAX_MESSAGE,
    APIError,
    AuthenticationError,
    BadRequestError,
    CapacityError,
    ConnectionFailed,
    GenerationError,
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
    WorkFailed,
    failure_document,
    from_response,
    message_of,
)
from mediagen_nb.client.resources.replication import Analysis
from mediagen_nb.protocol import messages

GENERATION_ID = "3f0c2a7e-5b1d-4c8e-9a6f-1d2e3f4a5b6c"


def answer(status: int, message: str) -> APIError:
    return from_response(
        status, json.dumps({"statusCode": status, "message": message, "error": "x"}).encode()
    )


@pytest.mark.parametrize(
    ("status", "message", "kind", "retryable"),
    [
        (400, "Unknown model 'x'. Available models: a, b", BadRequestError, False),
        (400, messages.PROMPT_MODERATED, ModerationError, False),
        (400, messages.IMAGE_MODERATED, ModerationError, False),
        (400, messages.not_enough_credits(5, 2, "https://app/billing"), InsufficientCreditsError, False),
        (400, "webhook must use https", WebhookError, False),
        (400, "webhook host is not allowed", WebhookError, False),
        (401, messages.INVALID_KEY, AuthenticationError, False),
        (403, messages.SUSPENDED, PermissionDeniedError, False),
        (404, "Generation not found", NotFoundError, False),
        (429, "API key rate limit exceeded", RateLimitError, True),
        (429, messages.key_cap_reached(100), KeyCapReachedError, False),
        (500, "Internal server error", ServerError, True),
        (502, "Bad gateway", ServerError, True),
        (503, messages.AT_CAPACITY, CapacityError, True),
        (418, "I'm a teapot", APIError, False),
        (409, "webhook must use https", APIError, False),  # the message's class is the 400's only
        (500, "Not enough credits", ServerError, True),
    ],
)
def test_each_answer_becomes_its_class(status: int, message: str, kind: type, retryable: bool) -> None:
    error = answer(status, message)
    assert type(error) is kind and error.status == status and error.message == message
    assert error.retryable is retryable and str(error) == f"{status} {message}"
    assert error.body == {"statusCode": status, "message": message, "error": "x"}


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (messages.INPUT_NOT_OBJECT, "input"),
        ("Missing required field: prompt", "prompt"),
        ("quality must be one of: low, medium, high", "quality"),
        ("input_images must have at most 3 items", "input_images"),
        (messages.UNSUPPORTED_MEDIA_FORMAT, "Unsupported"),
        (messages.UNREADABLE_VIDEO_DURATION, "Could"),
        ("audio URL is not reachable", "audio"),
        ("audio[0] URL is not reachable", "audio[0]"),
    ],
)
def test_a_refused_input_names_its_field(message: str, field: str) -> None:
    error = answer(400, message)
    assert type(error) is ValidationError and error.field == field and error.sent
    assert error.status == 400 and not error.retryable


def test_a_refused_input_keeps_the_body_and_may_name_no_field() -> None:
    error = answer(400, "prompt must be a string")
    assert error.body == {"statusCode": 400, "message": "prompt must be a string", "error": "x"}
    unnamed = answer(400, "'prompt' must be a string")  # no field at its start: none named
    assert type(unnamed) is ValidationError and unnamed.field is None


def test_a_message_that_only_mentions_a_rule_is_no_validation_error() -> None:
    assert type(answer(400, "The model must rest")) is BadRequestError  # "must be", "must have" name a rule
    assert type(answer(400, "Clip selection is out of range")) is BadRequestError
    assert type(answer(400, "reachable URL is not the one")) is BadRequestError
    assert type(answer(404, "Missing required field: prompt")) is NotFoundError


def test_credits_needed_the_balance_and_the_top_up_link_are_read_from_the_message() -> None:
    error = answer(400, messages.not_enough_credits(12, 3, "https://app.example/billing"))
    assert isinstance(error, InsufficientCreditsError)
    assert (error.needed, error.balance, error.top_up_url) == (12, 3, "https://app.example/billing")
    odd = answer(400, "Not enough credits. Top up at https://app.example/billing.")
    assert isinstance(odd, InsufficientCreditsError)
    assert (odd.needed, odd.balance, odd.top_up_url) == (None, None, "https://app.example/billing")
    shouting = answer(400, "Not enough credits. Top up at https://app.example/TOPUPX.")
    assert (
        isinstance(shouting, InsufficientCreditsError) and shouting.top_up_url == "https://app.example/TOPUPX"
    )
    was = answer(400, "Not enough credits: 1 credit needed; your balance was 0")
    assert isinstance(was, InsufficientCreditsError) and (was.needed, was.balance) == (1, 0)


def test_whose_rate_limit_and_which_cap() -> None:
    account = answer(429, messages.TOO_MANY_GENERATIONS)
    key = answer(429, "API key rate limit exceeded")
    assert isinstance(account, RateLimitError) and account.scope == "account"
    assert isinstance(key, RateLimitError) and key.scope == "key"
    cap = answer(429, messages.key_cap_reached(250))
    assert isinstance(cap, KeyCapReachedError) and cap.cap == 250
    unknown = answer(429, "API key monthly credit limit reached.")
    assert isinstance(unknown, KeyCapReachedError) and unknown.cap is None


@pytest.mark.parametrize(
    ("raw", "message", "body"),
    [
        (b'"Too many generations"', "Too many generations", "Too many generations"),  # 429s: a JSON string
        (b"<html>Bad gateway</html>", "<html>Bad gateway</html>", "<html>Bad gateway</html>"),  # not JSON
        (b"<p>\xff gateway</p>", "<p>\ufffd gateway</p>", "<p>\ufffd gateway</p>"),  # not UTF-8 either
        (b"", "HTTP 502", None),
        (b'{"detail": "x"}', '{"detail": "x"}', {"detail": "x"}),  # no message: the whole object
        (b'{"message": 5}', '{"message": 5}', {"message": 5}),
        (b"[" * 100_000 + b"]" * 100_000, None, None),  # nested past what Python parses: the raw text
    ],
    ids=["string", "html", "not-utf8", "empty", "no-message", "message-not-text", "deep"],
)
def test_the_message_is_read_from_any_body(raw: bytes, message: str | None, body: Any) -> None:
    error = from_response(502, raw)
    assert type(error) is ServerError and error.retryable
    if message is not None:
        assert error.message == message and error.body == body
    else:
        assert error.message.startswith("[[[") and len(error.message) == MAX_MESSAGE


def test_a_long_message_is_cut_with_an_ellipsis() -> None:
    error = answer(400, "x" * (MAX_MESSAGE * 2))
    assert error.message == "x" * (MAX_MESSAGE - 1) + "…" and len(error.message) == MAX_MESSAGE
    exact = answer(400, "y" * MAX_MESSAGE)
    assert exact.message == "y" * MAX_MESSAGE


def test_message_of_follows_the_spec_s_rule_and_masks() -> None:
    secret = "pk_live_abcdefghij"
    assert message_of(f"bad {secret}") == f"bad {MASKED}"
    assert message_of({"message": f"bad {secret}", "other": 1}) == f"bad {MASKED}"
    assert message_of({"detail": secret}) == json.dumps({"detail": MASKED})
    assert message_of(None) == "" and message_of(["a"]) == '["a"]'


def test_the_body_kept_on_an_error_is_masked_all_through() -> None:
    secret = "pk_live_abcdefghij"
    raw = json.dumps({"message": "no", secret: [secret, {"k": f"Bearer {secret}"}, 5, None]}).encode()
    error = from_response(400, raw)
    assert error.body == {"message": "no", MASKED: [MASKED, {"k": f"Bearer {MASKED}"}, 5, None]}


def test_errors_made_here_say_who_made_them() -> None:
    refused = ValidationError("prompt is missing", field="prompt", sent=False)
    assert refused.status is None and str(refused) == "prompt is missing" and not refused.sent
    assert ValidationError("x").status == 400 and ValidationError("x").field is None
    answered = {"error": {"message": "prompt is too long", "field": "prompt"}}
    assert ValidationError("prompt is too long", field="prompt", body=answered).body == answered  # kept
    base = MediagenError("something")
    assert base.status is None and not base.retryable and base.message == "something"
    assert base._render_traceback_() == ["MediagenError: something"]
    assert APIError(None, "no status").__str__() == "no status"
    never_sent = ConnectionFailed("cannot connect", sent=False)
    sent = ConnectionFailed("broke")
    assert (never_sent.sent, never_sent.retryable, sent.sent, sent.retryable) == (False, False, True, True)
    uncertain = errors.StartUncertain("lost", key="k", credits=5)
    assert (uncertain.key, uncertain.credits) == ("k", 5)
    assert errors.StartUncertain("lost", key="k").credits is None
    assert errors.ServiceResponseError("odd", field="id").field == "id"
    assert errors.ServiceResponseError("odd").field is None
    last = object()
    assert WaitTimeout("still running", last).last is last and WaitTimeout("x").last is None


def test_failed_work_names_what_failed_and_says_it_was_refunded() -> None:
    failed = Generation(GENERATION_ID, "gpt-image-2", "failed", None, "Generation timed out", 0)
    error = GenerationError(failed)
    assert error.generation is failed
    assert error.message == (
        f"gpt-image-2 failed: Generation timed out (generation {GENERATION_ID}; its credits were refunded)"
    )
    for resource, what in (
        (Analysis(GENERATION_ID, "failed", error="too long"), "the analysis"),
        (ReplicationRun("run_1", status="failed", error="too long"), "the replica"),  # type: ignore[call-arg]
        (ShortVideoJob("job_1", status="failed", error="too long"), "the video"),  # type: ignore[call-arg]
    ):
        work = WorkFailed(resource)
        assert work.resource is resource
        assert work.message == f"{what} failed: too long ({resource.id}; its credits were refunded)"

    class Other:
        id, error = "x_1", "gone"

    assert WorkFailed(Other()).message == "Other failed: gone (x_1; its credits were refunded)"


def test_a_failure_document_is_the_cli_s_one_shape() -> None:
    assert failure_document("BudgetExceeded", "over", 2) == {
        "ok": False,
        "error": {"type": "BudgetExceeded", "message": "over", "exit": 2},
    }
