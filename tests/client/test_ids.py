"""Ids are checked by the client, the layer that receives them, before anything is sent (issue 35).

Generation and analysis ids are UUIDs (the spec: ``Invalid generation id`` otherwise); run and job
ids, whose form the spec does not show, are short tokens of letters, digits, ``-`` and ``_``. An id
from a caller, a webhook's body or a server's answer never reaches a URL or a file name otherwise.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mediagen_nb.client import Client, Generation, ServiceResponseError, ValidationError
from mediagen_nb.client.checks import checked_id, header_value, is_id, sendable
from mediagen_nb.protocol import messages

UUID = "3f0c2a7e-5b1d-4c8e-9a6f-1d2e3f4a5b6c"
NOT_UUIDS = [
    "gen_123",
    "3f0c2a7e5b1d4c8e9a6f1d2e3f4a5b6c",  # the digits of a UUID without its dashes
    f"{UUID}x",
    f" {UUID}",
    f"{UUID}/../../x",
    "../../etc/passwd",
    "",
]
NOT_TOKENS = ["", "../x", "a/b", "-starts-with-a-dash", "a b", "a" * 129, "é", "a\nb", "a?b=c", "a%2Fb"]


@pytest.mark.parametrize("kind", ["generation", "analysis"])
@pytest.mark.parametrize("wrong", NOT_UUIDS)
def test_generation_and_analysis_ids_must_be_uuids(kind: str, wrong: str) -> None:
    assert not is_id(wrong, kind)
    with pytest.raises(ValidationError) as raised:
        checked_id(wrong, kind)
    error = raised.value
    assert error.sent is False and error.status is None and error.field == "id"
    assert error.message.startswith(
        messages.INVALID_GENERATION_ID if kind == "generation" else "Invalid analysis id"
    )
    assert "is not a UUID" in error.message


@pytest.mark.parametrize("kind", ["generation", "analysis", "run", "job"])
def test_ids_of_their_form_pass_as_they_are(kind: str) -> None:
    for good in (
        (UUID, UUID.upper()) if kind in ("generation", "analysis") else (UUID, "run_1", "J-9", "a" * 128)
    ):
        assert is_id(good, kind) and checked_id(good, kind) == good


@pytest.mark.parametrize("kind", ["run", "job"])
@pytest.mark.parametrize("wrong", NOT_TOKENS)
def test_run_and_job_ids_are_short_tokens(kind: str, wrong: str) -> None:
    assert not is_id(wrong, kind)
    with pytest.raises(ValidationError, match=f"Invalid {kind} id") as raised:
        checked_id(wrong, kind)
    assert raised.value.field == "id" and raised.value.sent is False and raised.value.status is None


@pytest.mark.parametrize(
    ("kind", "says"), [("generation", "is not a UUID (use"), ("run", "(use"), ("job", "(use")]
)
def test_a_refused_id_is_quoted_in_80_characters(kind: str, says: str) -> None:
    long = "../" + "x" * 200
    with pytest.raises(ValidationError) as raised:
        checked_id(long, kind)
    assert raised.value.message == f"Invalid {kind} id: {long[:80]!r} {says} the id its start returned)"


@pytest.mark.parametrize("wrong", [None, 5, ["a"], b"3f0c2a7e"])
def test_an_id_that_is_not_text_is_refused(wrong: Any) -> None:
    assert not is_id(wrong, "run")
    with pytest.raises(ValidationError, match="generation id must be a string") as raised:
        checked_id(wrong, "generation")
    assert raised.value.field == "id" and raised.value.sent is False
    assert raised.value.message == f"generation id must be a string, not {type(wrong).__name__}"


def test_a_resource_s_own_id_is_taken_from_it() -> None:
    generation = Generation(UUID, "gpt-image-2", "processing", None, None, 3)
    assert checked_id(generation, "generation") == UUID


# ------------------------------------------------------------------- the client's operations, unsent


@pytest.fixture
def client() -> Iterator[tuple[Client, list[httpx.Request]]]:
    """A client whose every request is recorded and answered 500: none may be sent in these tests."""
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500, json={"statusCode": 500, "message": "no request was expected"})

    with Client(
        "pk_live_ids",
        base_url="https://service.example",
        transport=httpx.MockTransport(answer),
        time_scale=600,
    ) as made:
        yield made, sent


CALLS = {
    "generation": lambda c, i: c.generation(i),
    "generation-wait": lambda c, i: c.generation(i, wait=5),
    "wait": lambda c, i: c.wait(i),
    "analysis": lambda c, i: c.analysis(i),
    "build_blueprint": lambda c, i: c.build_blueprint(i),
    "replicate": lambda c, i: c.replicate(i),
    "webhook": lambda c, i: c.confirm_webhook({"id": i, "modelId": "gpt-image-2", "status": "succeeded"}),
}


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("wrong", ["gen_123", "../../x", f"{UUID}/.."])
def test_operations_refuse_an_id_that_is_not_a_uuid_before_sending(
    client: tuple[Client, list[httpx.Request]], call: str, wrong: str
) -> None:
    made, sent = client
    with pytest.raises(ValidationError) as raised:
        CALLS[call](made, wrong)
    assert raised.value.sent is False and "is not a UUID" in raised.value.message
    assert sent == []


@pytest.mark.parametrize(
    "call",
    [
        lambda c, i: c.replication_run(i),
        lambda c, i: c.job(i),
        lambda c, i: c.confirm_webhook({"jobId": i, "status": "done"}),
        lambda c, i: c.confirm_webhook({"event": "replication.completed", "id": i}),
    ],
    ids=["replication_run", "job", "webhook-job", "webhook-run"],
)
def test_run_and_job_operations_refuse_a_path_before_sending(
    client: tuple[Client, list[httpx.Request]], call: Any
) -> None:
    made, sent = client
    with pytest.raises(ValidationError, match=r"Invalid (run|job) id"):
        call(made, "../../x")
    assert sent == []


def test_an_answer_whose_id_is_not_a_uuid_is_refused() -> None:
    """A server (or a man in the middle) answering a generation whose id is a path: never kept."""

    def answer(request: httpx.Request) -> httpx.Response:
        data = {"id": "../../x", "modelId": "m", "status": "processing", "creditsSpent": 1, "output": None}
        return httpx.Response(200, json={"success": True, "data": data})

    with (
        Client(
            "pk_live_ids",
            base_url="https://service.example",
            transport=httpx.MockTransport(answer),
            time_scale=600,
        ) as made,
        pytest.raises(ServiceResponseError, match="not a UUID") as raised,
    ):
        made.generation(UUID)
    assert raised.value.field == "id"


# ------------------------------------------------------------------------- values, before they go out


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("caf\udce9", "prompt holds a character that cannot be sent ('\\udce9', not valid Unicode text); "),
        (["ok", {"deep": "\ud800"}], "prompt holds a character that cannot be sent ('\\ud800', not valid"),
        (float("nan"), "prompt must be a finite number (NaN and infinity cannot be sent)"),
        ([1.0, float("inf")], "prompt must be a finite number (NaN and infinity cannot be sent)"),
    ],
    ids=["surrogate", "nested-surrogate", "nan", "infinity"],
)
def test_a_value_json_cannot_carry_is_refused_naming_its_field(value: Any, says: str) -> None:
    with pytest.raises(ValidationError) as raised:
        sendable({"seed": 7, "prompt": value})
    error = raised.value
    assert error.message.startswith(says) and error.field == "prompt" and error.sent is False
    if "character" in says:
        assert error.message.endswith("fix or re-type that text")


def test_values_json_carries_pass() -> None:
    sendable({"prompt": "un phare à l'aube ☕", "seed": 7, "scale": 1.5, "at": Path("/x"), "none": None})


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("order\n42", "idempotency_key has a line break at position 5"),
        ("order\r42", "idempotency_key has a line break at position 5"),
        ("ord\ter", "idempotency_key has a control character at position 3"),
        ("\x7f", "idempotency_key has a control character at position 0"),
        ("commande-é", "idempotency_key has the non-ASCII character 'é' at position 9"),
    ],
)
def test_a_header_value_httpx_cannot_send_is_refused_before_it(value: str, says: str) -> None:
    with pytest.raises(ValidationError) as raised:
        header_value("idempotency_key", value)
    assert raised.value.message == f"{says}; use letters, digits and -_.: (ASCII only)"
    assert raised.value.field == "idempotency_key" and raised.value.sent is False


def test_a_printable_header_value_passes_as_it_is() -> None:
    printable = "".join(chr(c) for c in range(0x20, 0x7F))
    assert header_value("idempotency_key", printable) == printable
