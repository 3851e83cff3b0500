"""Local files as inputs: a Path, a string path, a sweep's path column, a magic's ``--audio ./x.wav``, S3.

Every file goes to where the service can read it (the sandbox's uploads, or a loopback S3 server
through a presigned URL the sandbox downloads), once per content, and is billed by its measured
length: ``zonos2`` charges 0.5 credits per second of its voice sample.
"""

import socket
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest

import mediagen_nb  # noqa: F401  (registers df.mediagen)
from mediagen_nb.client import AsyncClient, Client, Limits, ValidationError, uploads
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox

SCALE = 600.0


def voice(folder: Path, seconds: float, name: str | None = None) -> Path:
    """A real WAV file of ``seconds`` of (quiet) sound."""
    target = folder / (name or f"voice-{seconds:g}s.wav")
    rate = 8000
    with wave.open(str(target), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\x01\x00" * int(rate * seconds))
    return target


def charges(sandbox: Sandbox) -> dict[str, int]:
    """Credits charged per resource id, from the sandbox's own ledger."""
    entries = httpx.get(f"{sandbox.base_url}{path('sandbox_ledger')}", timeout=10).json()["data"]["entries"]
    found: dict[str, int] = {}
    for entry in entries:
        sign = 1 if entry["kind"] == "charge" else -1
        found[entry["resourceId"]] = found.get(entry["resourceId"], 0) + sign * entry["credits"]
    return found


@pytest.fixture
def client(served: Sandbox) -> Iterator[Client]:
    with Client(served.demo_key, base_url=served.base_url, limits=Limits(time_scale=SCALE)) as made:
        yield made


def test_a_path_and_a_string_path_are_uploaded_once_and_billed_by_their_length(
    client: Client, served: Sandbox, tmp_path: Path
) -> None:
    short, long = voice(tmp_path, 20), voice(tmp_path, 40)
    before = uploads.sent_files
    twenty = client.estimate("zonos2", text="Hello there", audio=short)  # a Path
    forty = client.estimate("zonos2", text="Hello there", audio=str(long))  # a string path
    assert twenty.credits == 10 and forty.credits == 20  # 0.5 credits a second of each file
    made = client.generate("zonos2", text="Hello there", audio=str(short), reuse=True)
    assert made.status == "succeeded"
    assert charges(served)[made.id] == twenty.credits
    sent = served.world.generations.items[made.id].input["audio"]
    assert sent.endswith(f"/{uploads.name_of(short)}") and sent.endswith(".wav")  # content-addressed
    assert uploads.sent_files - before == 2  # two files, each uploaded once (the estimate's upload reused)
    again = client.generate("zonos2", text="Hello there", audio=short, reuse=True)
    assert again.id == made.id and again.reused  # the same file is the same input: the same key


def test_a_missing_file_names_the_field_and_charges_nothing(
    client: Client, served: Sandbox, tmp_path: Path
) -> None:
    with pytest.raises(ValidationError, match=r"audio: there is no file .*nope\.wav") as refused:
        client.generate("zonos2", text="Hello", audio=str(tmp_path / "nope.wav"))
    assert refused.value.field == "audio" and refused.value.status is None
    zonos2 = client.model("zonos2")  # a sweep's rows attach their files in the calling thread
    with pytest.raises(ValidationError, match=r"audio: there is no file .*nope\.wav"):
        client.attach(zonos2, {"text": "Hello", "audio": tmp_path / "nope.wav"})
    assert client.attach(zonos2, {"text": "Hello"}) == {"text": "Hello"}  # nothing local: as it was
    assert charges(served) == {}


def test_the_service_without_storage_says_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(uploads.ENV_UPLOAD_URL, raising=False)
    with pytest.raises(ValidationError, match="set MEDIAGEN_UPLOAD_URL=s3://bucket/prefix") as refused:
        uploads.upload("audio", voice(tmp_path, 1), sandbox_url=None)
    assert refused.value.field == "audio"


def test_a_callable_chooses_the_url(client: Client, served: Sandbox, tmp_path: Path) -> None:
    """Any function path -> url: here one that puts the file on the sandbox by hand."""
    seen: list[Path] = []

    def mine(file: Path) -> str:
        seen.append(file)
        url = f"{served.base_url}{path('sandbox_upload', name='mine-' + file.name)}"
        key = {"Authorization": f"Bearer {served.demo_key}"}  # the sandbox takes uploads from its accounts
        stored = httpx.put(url, content=file.read_bytes(), headers=key, timeout=10).raise_for_status()
        return str(stored.json()["data"]["url"])  # where the sandbox keeps it (content-addressed)

    uploads.uploads(mine)
    try:
        estimate = client.estimate("zonos2", text="Hi", audio=voice(tmp_path, 10))
    finally:
        uploads.uploads(None)
    assert estimate.credits == 5 and [p.name for p in seen] == ["voice-10s.wav"]


def test_a_path_column_of_a_sweep(served: Sandbox, tmp_path: Path) -> None:
    files = [voice(tmp_path, 20, "a.wav"), voice(tmp_path, 30, "b.wav")]
    rows = pd.DataFrame(
        {"text": ["one", "two", "three"], "audio": [str(files[0]), str(files[1]), str(files[0])]}
    )
    client = AsyncClient(
        served.demo_key,
        base_url=served.base_url,
        limits=Limits(time_scale=SCALE),
        ledger=str(tmp_path / "l.db"),
    )
    before = uploads.sent_files
    priced = rows.mediagen.estimate("zonos2", client=client, show=False)
    assert list(priced["credits"]) == [10, 15, 10]
    done = rows.mediagen.run("zonos2", client=client, progress=False)
    assert list(done["status"]) == ["succeeded"] * 3
    charged = charges(served)
    assert [charged[g] for g in done["generation_id"]] == [10, 15, 10]
    assert uploads.sent_files - before == 2  # three rows, two files
    assert all(str(u["audio"]).endswith(".wav") for u in done["input"])


# -- S3: a real S3-compatible server on loopback (moto's server mode) -------------------------------


def s3_client(boto3: Any, endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )


@pytest.fixture
def s3() -> Iterator[dict[str, Any]]:
    server_mode = pytest.importorskip("moto.server", reason="moto[server] is not installed")
    boto3 = pytest.importorskip("boto3")
    pytest.importorskip("s3fs", reason="s3fs is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = server_mode.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    options = {"key": "testing", "secret": "testing", "endpoint_url": endpoint}
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    ).create_bucket(Bucket="voices")
    try:
        yield {"endpoint": endpoint, "options": options, "boto3": boto3}
    finally:
        uploads.uploads(None)
        server.stop()


def test_s3_files_are_read_by_the_service_through_a_presigned_url(
    client: Client, served: Sandbox, tmp_path: Path, s3: dict[str, Any]
) -> None:
    uploads.uploads("s3://voices/inputs", **s3["options"])
    sample = voice(tmp_path, 20)
    before = uploads.sent_files
    made = client.generate("zonos2", text="Hello from S3", audio=sample)
    again = client.estimate("zonos2", text="Hello again", audio=sample)  # the same file: no new upload
    assert made.status == "succeeded" and again.credits == 10
    assert charges(served)[made.id] == 10  # the sandbox downloaded the presigned URL and measured 20 s
    assert uploads.sent_files - before == 1
    listed = (
        s3["boto3"]
        .client(
            "s3",
            endpoint_url=s3["endpoint"],
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        .list_objects_v2(Bucket="voices", Prefix="inputs/")
    )
    assert [o["Key"] for o in listed["Contents"]] == [f"inputs/{uploads.name_of(sample)}"]


def test_a_rerun_after_a_restart_reuses_the_generation_made_from_an_s3_file(
    client: Client, served: Sandbox, tmp_path: Path, s3: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A presigned URL changes each time it is signed; the Idempotency-Key follows the file's content."""
    uploads.uploads("s3://voices/inputs", **s3["options"])
    sample = voice(tmp_path, 20)
    made = client.run("zonos2", {"text": "Hello, once", "audio": sample}, reuse=True)
    monkeypatch.setattr(uploads, "_urls", {})  # a new kernel: nothing remembered, the file signed again
    monkeypatch.setattr(uploads, "_sources", {})
    time.sleep(1.1)  # a signature a second later is another URL
    again = client.run("zonos2", {"text": "Hello, once", "audio": str(sample)}, reuse=True)
    assert again.id == made.id and again.reused
    assert charges(served)[made.id] == 10  # charged once, for 20 s
    other = client.run("zonos2", {"text": "Hello, once", "audio": voice(tmp_path, 30)}, reuse=True)
    assert other.id != made.id and charges(served)[other.id] == 15  # other content: its own generation


def test_the_same_file_under_other_storage_options_is_put_there_not_reused(
    tmp_path: Path, s3: dict[str, Any]
) -> None:
    """URLs are remembered per destination and its options: another endpoint gets its own URL."""
    sample = voice(tmp_path, 5)
    uploads.uploads("s3://voices/inputs", **s3["options"])
    first = uploads.upload("audio", sample, None)
    other = s3["endpoint"].replace("127.0.0.1", "localhost")
    uploads.uploads("s3://voices/inputs", **{**s3["options"], "endpoint_url": other})
    second = uploads.upload("audio", sample, None)
    assert first.startswith(s3["endpoint"]) and second.startswith(other)
    assert uploads.upload("audio", sample, None) == second  # and remembered there
