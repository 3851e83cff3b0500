"""Every message built from a server's words is masked, whichever class raises it (issue 35).

Masking lives in the base exception (``MediagenError.__init__``): each class of the hierarchy, the
client's own and those of other layers, is built here with a key in its words and must show none of
it, in its text, its arguments, its repr, IPython's one-line rendering or the body it keeps. And the
issue's case end to end: a 200 answer whose wrong-typed field echoes the caller's key (JSON-escaped,
so no earlier pass saw it as a key) raises a ServiceResponseError, and a StartUncertain, without it.
"""

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mediagen_nb.client import (
    Analysis,
    Client,
    Generation,
    RetryPolicy,
    ServiceResponseError,
    StartUncertain,
    errors,
)
from mediagen_nb.client.errors import MASKED, MediagenError, from_response, mask

SECRET = "pk_live_Zq81xYv0tRm2LsKa9pWc3BnE7uHd"
WORDS = f"the service said: Authorization: Bearer {SECRET} is not valid ({SECRET})"
GENERATION_ID = "3f0c2a7e-5b1d-4c8e-9a6f-1d2e3f4a5b6c"


def every_error_class() -> Iterator[type[MediagenError]]:
    """MediagenError and every class below it (the client's, the ledger's, and any other layer loaded)."""
    seen: list[type[MediagenError]] = [MediagenError]
    while seen:
        cls = seen.pop()
        yield cls
        seen.extend(cls.__subclasses__())


def build(cls: type[MediagenError]) -> MediagenError:
    """An instance of ``cls`` whose words (its message, the object it reports) hold the key."""
    if issubclass(cls, errors.GenerationError):
        generation = Generation(GENERATION_ID, "gpt-image-2", "failed", None, WORDS, 0)
        return cls(generation)  # type: ignore[call-arg]
    if issubclass(cls, errors.WorkFailed):
        analysis = Analysis(GENERATION_ID, "failed", error=WORDS)  # type: ignore[call-arg]
        return cls(analysis)  # type: ignore[call-arg]
    if issubclass(cls, errors.StartUncertain):
        return cls(WORDS, key="mgnb-abc", credits=5)  # type: ignore[call-arg]
    if issubclass(cls, errors.APIError) and not issubclass(cls, errors.ValidationError):
        return cls(400, WORDS, body={"message": WORDS, "echo": [SECRET]})  # type: ignore[call-arg]
    if issubclass(cls, errors.ValidationError):
        return cls(WORDS, field="prompt")  # type: ignore[call-arg]
    return cls(WORDS)


@pytest.mark.parametrize("cls", list(every_error_class()), ids=lambda cls: cls.__name__)
def test_every_error_class_masks_the_key_in_everything_it_shows(cls: type[MediagenError]) -> None:
    error = build(cls)
    shown = [
        str(error),
        repr(error),
        error.message,
        *map(str, error.args),
        *error._render_traceback_(),
        json.dumps(getattr(error, "body", None)),
    ]
    for text in shown:
        assert "Zq81xYv0tRm2LsKa9pWc3BnE7uHd" not in text
    assert MASKED in error.message


@pytest.mark.parametrize("status", [400, 401, 403, 404, 429, 500, 503, 418])
@pytest.mark.parametrize("body", [WORDS, {"message": WORDS}, {"detail": WORDS}, [WORDS]], ids=repr)
def test_an_error_answer_of_any_status_and_shape_is_masked(status: int, body: Any) -> None:
    raw = json.dumps(body).encode()
    for answer in (raw, WORDS.encode()):  # as JSON, and as text that is not JSON
        error = from_response(status, answer)
        assert SECRET not in str(error) and SECRET not in json.dumps(error.body)
        assert SECRET not in repr(error.args)


def test_mask_leaves_text_without_a_key_as_it_is() -> None:
    for text in ("", "Bearer pk_live_...", "a pk_live key", "Not enough credits: 5 needed"):
        assert mask(text) == text
    assert mask(f"x {SECRET}, bearer abc.def;") == f"x {MASKED}, bearer {MASKED};"


# ---------------------------------------------------------------------- a server that echoes the key


def echoing(request: httpx.Request) -> httpx.Response:
    """A 200 whose creditsSpent (a number by the spec) is the caller's key, JSON-escaped."""
    echoed = request.headers["authorization"].removeprefix("Bearer ")
    escaped = "".join(f"\\u{ord(char):04x}" for char in echoed)
    data = (
        f'{{"id": "{GENERATION_ID}", "modelId": "gpt-image-2", "status": "processing", '
        f'"creditsSpent": "{escaped}", "output": null, "error": null, "createdAt": "2026-09-16T00:00:00Z"}}'
    )
    status = 201 if request.method == "POST" else 200
    return httpx.Response(status, content=f'{{"success": true, "data": {data}}}'.encode())


@pytest.fixture
def client() -> Iterator[Client]:
    with Client(
        SECRET,
        base_url="https://service.example",
        transport=httpx.MockTransport(echoing),
        time_scale=600,
        retry=RetryPolicy(max_attempts=1),
    ) as made:
        yield made


def test_a_wrong_typed_field_echoing_the_key_is_masked_in_the_read_s_error(client: Client) -> None:
    with pytest.raises(ServiceResponseError) as raised:
        client.generation(GENERATION_ID)
    assert raised.value.field == "creditsSpent" and MASKED in raised.value.message
    assert SECRET not in str(raised.value) and SECRET not in repr(raised.value.args)


def test_a_start_answered_so_is_uncertain_and_masked(client: Client) -> None:
    with pytest.raises(StartUncertain) as raised:
        client.run("gpt-image-2", {"prompt": "a fox"}, validate=False)
    assert isinstance(raised.value.__cause__, ServiceResponseError)
    for error in (raised.value, raised.value.__cause__):
        assert SECRET not in str(error) and MASKED in str(error)
