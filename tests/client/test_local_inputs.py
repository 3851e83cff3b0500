"""Local files as inputs: a Path, a string path, a sweep's path column, a magic's ``--audio ./x.wav``, S3.

Every file goes to where the service can read it (the sandbox's uploads, or a loopback S3 server
through a presigned URL the sandbox downloads), once per content, and is billed by its measured
length: ``zonos2`` charges 0.5 credits per second of its voice sample.
"""

import hashlib
import io
import json
import pickle
import traceback
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import _hostile as hostile
import httpx
import pandas as pd
import pytest
from _shared import moto_s3, wav
from PIL import Image

import mediagen_nb  # noqa: F401  (registers df.mediagen)
from mediagen_nb.client import (
    AsyncClient,
    Client,
    UploadFailed,
    ValidationError,
    errors,
    settings,
    uploads,
)
from mediagen_nb.client.uploads import UPLOADED
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox

SCALE = 600.0


def voice(folder: Path, seconds: float, name: str | None = None) -> Path:
    """A real WAV file of ``seconds`` of (quiet) sound."""
    target = folder / (name or f"voice-{seconds:g}s.wav")
    target.write_bytes(wav(seconds))
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
    with Client(served.demo_key, base_url=served.base_url, time_scale=SCALE) as made:
        yield made


def test_a_path_and_a_string_path_are_uploaded_once_and_billed_by_their_length(
    client: Client, served: Sandbox, tmp_path: Path
) -> None:
    short, long = voice(tmp_path, 20), voice(tmp_path, 40)
    before = UPLOADED.sent
    twenty = client.estimate("zonos2", text="Hello there", audio=short)  # a Path
    forty = client.estimate("zonos2", text="Hello there", audio=str(long))  # a string path
    assert twenty.credits == 10 and forty.credits == 20  # 0.5 credits a second of each file
    made = client.generate("zonos2", text="Hello there", audio=str(short), reuse=True)
    assert made.status == "succeeded"
    assert charges(served)[made.id] == twenty.credits
    sent = served.world.generations.items[made.id].input["audio"]
    assert sent.endswith(f"/{uploads.name_of(short)}") and sent.endswith(".wav")  # content-addressed
    assert UPLOADED.sent - before == 1  # estimates measure here and upload nothing; the run uploads
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
    monkeypatch.delenv(settings.ENV_UPLOAD_URL, raising=False)
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
        made = client.run("zonos2", text="Hi", audio=voice(tmp_path, 10))
    finally:
        uploads.uploads(None)
    assert charges(served)[made.id] == 5 and [p.name for p in seen] == ["voice-10s.wav"]


def test_a_path_column_of_a_sweep(served: Sandbox, tmp_path: Path) -> None:
    files = [voice(tmp_path, 20, "a.wav"), voice(tmp_path, 30, "b.wav")]
    rows = pd.DataFrame(
        {"text": ["one", "two", "three"], "audio": [str(files[0]), str(files[1]), str(files[0])]}
    )
    client = AsyncClient(
        served.demo_key,
        base_url=served.base_url,
        time_scale=SCALE,
        ledger=str(tmp_path / "l.db"),
    )
    before = UPLOADED.sent
    priced = rows.mediagen.estimate("zonos2", client=client, show=False, allow_files_from=tmp_path)
    assert list(priced["credits"]) == [10, 15, 10]
    assert UPLOADED.sent == before  # measured here: an estimate uploads nothing
    done = rows.mediagen.run("zonos2", client=client, progress=False, allow_files_from=tmp_path)
    assert list(done["status"]) == ["succeeded"] * 3
    charged = charges(served)
    assert [charged[g] for g in done["generation_id"]] == [10, 15, 10]
    assert UPLOADED.sent - before == 2  # three rows, two files
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
    with moto_s3() as endpoint:
        boto3 = pytest.importorskip("boto3")
        options = {"key": "testing", "secret": "testing", "endpoint_url": endpoint}
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        ).create_bucket(Bucket="voices")
        yield {"endpoint": endpoint, "options": options, "boto3": boto3}


def test_s3_files_are_read_by_the_service_through_a_presigned_url(
    client: Client, served: Sandbox, tmp_path: Path, s3: dict[str, Any]
) -> None:
    uploads.uploads("s3://voices/inputs", **s3["options"])
    sample = voice(tmp_path, 20)
    before = UPLOADED.sent
    made = client.generate("zonos2", text="Hello from S3", audio=sample)
    again = client.estimate("zonos2", text="Hello again", audio=sample)  # the same file: no new upload
    assert made.status == "succeeded" and again.credits == 10
    assert charges(served)[made.id] == 10  # the sandbox downloaded the presigned URL and measured 20 s
    assert UPLOADED.sent - before == 1
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
    monkeypatch.setattr(UPLOADED, "urls", {})  # a new kernel: nothing remembered, signed again
    monkeypatch.setattr(UPLOADED, "sources", {})
    import botocore.auth  # s3fs signs with botocore: its clock, a second on

    signed_now = botocore.auth.get_current_datetime
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: signed_now() + timedelta(seconds=1))
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


# -- only media of the field's kind, judged by content -----------------------------------------------------


def test_only_media_of_the_fields_kind_is_sent_judged_by_content(
    client: Client, served: Sandbox, tmp_path: Path
) -> None:
    """A direct call is the user's own intent (no folder rule), but a file goes up only when its bytes
    are media of the kind its field takes: a credentials file named like a voice never leaves."""
    secret_file = tmp_path / "voice.wav"  # named like audio, holds credentials
    secret_file.write_text('{"client_secret": "s3cr3t-value"}')
    face = tmp_path / "face.png"
    face.write_bytes(httpx.get(f"{served.base_url}{path('sandbox_samples', name='face.png')}").content)
    before = UPLOADED.sent
    with pytest.raises(ValidationError, match=r"audio: .*voice\.wav' is not media, and only an audio file"):
        client.generate("zonos2", text="Hello", audio=secret_file)
    with pytest.raises(ValidationError, match=r"audio: .*voice\.wav' is not media") as refused:
        client.estimate("zonos2", text="Hello", audio=str(secret_file))
    assert refused.value.field == "audio" and refused.value.sent is False
    with pytest.raises(ValidationError, match=r"audio: .*face\.png' is image, and only an audio file"):
        client.run("zonos2", text="Hello", audio=face)
    with pytest.raises(ValidationError, match=r"image: .*voice\.wav' is not media, and only an image file"):
        client.attach(client.model("infinitetalk"), {"image": secret_file, "audio": face})
    assert UPLOADED.sent == before
    assert charges(served) == {}
    assert served.world.uploads.stored() == []  # the sandbox never received a byte of them


def test_a_file_is_named_by_its_content_not_its_name(client: Client, served: Sandbox, tmp_path: Path) -> None:
    """A WAV saved without an extension is sent as .wav (the service reads the type from the URL)."""
    bare = voice(tmp_path, 12, "recording")
    made = client.generate("zonos2", text="Hello", audio=bare)
    assert served.world.generations.items[made.id].input["audio"].endswith(".wav")
    assert charges(served)[made.id] == 6


# -- an estimate measures a local file here and uploads nothing --------------------------------------------


def sample(served: Sandbox, folder: Path, name: str) -> Path:
    """A copy of one of the sandbox's sample inputs, as a local file."""
    target = folder / name
    target.write_bytes(
        httpx.get(f"{served.base_url}{path('sandbox_samples', name=name)}", timeout=30).content
    )
    return target


@pytest.mark.parametrize(
    ("model_id", "options"),
    [("infinitetalk", {"resolution": "480p"}), ("infinitetalk", {"resolution": "720p"}), ("zonos2", {})],
)
def test_an_estimate_of_a_local_file_uploads_nothing_and_equals_the_charge(
    client: Client, served: Sandbox, tmp_path: Path, model_id: str, options: dict[str, Any]
) -> None:
    face = sample(served, tmp_path, "face.png")
    files = [sample(served, tmp_path, n) for n in ("voice.wav", "voice.mp3", "short-voice.wav")]
    files.append(voice(tmp_path, 20.3))  # a started second is a whole one
    for audio in files:
        inputs = {"image": face, **options} if model_id == "infinitetalk" else {"text": "Hello there"}
        before = UPLOADED.sent
        estimate = client.estimate(model_id, {**inputs, "audio": audio})
        assert UPLOADED.sent == before, "an estimate uploads nothing"
        assert f"audio: {audio.name} measured here" in (estimate.billing or "")
        made = client.run(model_id, {**inputs, "audio": audio})
        assert charges(served)[made.id] == estimate.credits, (audio.name, estimate)


def test_an_unreadable_length_is_refused_by_the_estimate_as_the_run_would(
    client: Client, served: Sandbox, tmp_path: Path
) -> None:
    broken = sample(served, tmp_path, "broken.mp4")
    with pytest.raises(
        ValidationError, match=r"^Could not read the video duration: the length of broken\.mp4"
    ):
        client.estimate("video-bg-remover", video=broken)
    with pytest.raises(ValidationError, match=r"Could not read the video duration"):
        client.run("video-bg-remover", video=broken)
    assert charges(served) == {}


# -- a sandbox restarted on the same port gets the files again ---------------------------------------------


def test_a_file_used_before_a_sandbox_restart_is_uploaded_again(tmp_path: Path) -> None:
    sample_file = voice(tmp_path, 10)
    first = Sandbox(time_scale=SCALE, seed=1).start()
    port = int(str(first.base_url).rsplit(":", 1)[1])
    with Client(first.demo_key, base_url=first.base_url, time_scale=SCALE) as client:
        made = client.generate("zonos2", text="Before", audio=sample_file)
        assert made.status == "succeeded"
        first.stop()
        second = Sandbox(time_scale=SCALE, seed=2).start(port=port)
        try:
            again = client.generate("zonos2", text="After", audio=sample_file)  # same kernel, same client
            assert again.status == "succeeded" and charges(second)[again.id] == 5
        finally:
            second.stop()


# -- storage failures: one UploadFailed line, no credentials -----------------------------------------------


def assert_storage_failure_is_one_clean_line(error: BaseException, secret: str) -> None:
    assert isinstance(error, UploadFailed)
    assert error.__cause__ is None and error.__context__ is None  # no chained botocore traceback
    assert error._render_traceback_() == [f"UploadFailed: {error}"] and "\n" not in str(error)
    texts = [str(error), repr(error), repr(error.args), "".join(traceback.format_exception(error))]
    assert all(secret not in text for text in texts), texts
    assert "site-packages" not in texts[-1]  # only our own frames: none of fsspec's, s3fs' or botocore's


def test_a_missing_bucket_is_one_upload_failed_line_without_the_secret(
    client: Client, served: Sandbox, tmp_path: Path, s3: dict[str, Any]
) -> None:
    secret = "s3-secret-" + uuid.uuid4().hex
    uploads.uploads("s3://no-such-bucket/inputs", **{**s3["options"], "secret": secret})
    with pytest.raises(UploadFailed) as failed:
        client.generate("zonos2", text="Hello", audio=voice(tmp_path, 5))
    assert str(failed.value).startswith("uploads: cannot put voice-5s.wav in s3://no-such-bucket/inputs (")
    assert "FileNotFoundError" in str(failed.value)
    assert_storage_failure_is_one_clean_line(failed.value, secret)
    assert secret not in repr(UPLOADED.target)
    assert charges(served) == {}


def test_a_wrong_secret_is_one_upload_failed_line_without_the_secret(
    client: Client, served: Sandbox, tmp_path: Path, s3: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    moto_settings = pytest.importorskip("moto.settings")
    iam = s3["boto3"].client(
        "iam",
        endpoint_url=s3["endpoint"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    iam.create_user(UserName="uploader")
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    iam.put_user_policy(UserName="uploader", PolicyName="s3", PolicyDocument=json.dumps(policy))
    access = iam.create_access_key(UserName="uploader")["AccessKey"]
    monkeypatch.setattr(moto_settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # moto checks signatures now
    wrong = "wrong-" + uuid.uuid4().hex
    uploads.uploads(
        "s3://voices/inputs",
        key=access["AccessKeyId"],
        secret=wrong,
        endpoint_url=s3["endpoint"],
        skip_instance_cache=True,
    )
    with pytest.raises(UploadFailed) as failed:
        client.run("zonos2", text="Hello", audio=voice(tmp_path, 5))
    assert "PermissionError" in str(failed.value) and "s3://voices/inputs" in str(failed.value)
    assert_storage_failure_is_one_clean_line(failed.value, wrong)
    uploads.uploads(
        "s3://voices/inputs",
        key=access["AccessKeyId"],
        secret=access["SecretAccessKey"],
        endpoint_url=s3["endpoint"],
        skip_instance_cache=True,
    )
    assert uploads.upload("audio", voice(tmp_path, 5), None).startswith(s3["endpoint"])  # the right one works
    assert charges(served) == {}


def test_storage_options_never_show_or_pickle_their_secrets() -> None:
    secret = "s3-secret-" + uuid.uuid4().hex
    options = uploads.StorageOptions({"key": "AKIA-ID", "secret": secret, "endpoint_url": "http://x:9"})
    assert secret not in repr(options) and "AKIA-ID" not in str(options)
    assert "endpoint_url" in repr(options) and options.reveal()["secret"] == secret
    assert options.mask(f"denied for AKIA-ID/{secret} at http://x:9") == "denied for ***/*** at http://x:9"
    with pytest.raises(TypeError):
        pickle.dumps(options)


def test_a_refused_uploads_call_keeps_no_secret_in_its_verbose_traceback() -> None:
    """Even every frame's locals (what ``%xmode Verbose`` shows) hold the options masked only."""
    from IPython.core.ultratb import VerboseTB

    secret = "s3-secret-" + uuid.uuid4().hex
    with pytest.raises(errors.ConfigurationError) as refused:
        uploads.uploads("my-bucket/inputs", key="AKIA-ID", secret=secret)
    error = refused.value
    assert error.__traceback__ is not None
    ours = error.__traceback__.tb_next  # from uploads() down: this test's own frame holds the secret
    shown = VerboseTB().text(type(error), error, ours)
    assert "uploads: give an fsspec URL" in shown and "StorageOptions(key, secret" in shown
    assert secret not in shown and "AKIA-ID" not in shown


IMAGE_MODEL = {
    **hostile.MODEL,
    "id": "img-edit",
    "input_schema": {
        "type": "object",
        "required": ["image"],
        "properties": {"image": {"type": "string", "format": "uri", "contentMediaType": "image/png"}},
    },
}


@pytest.mark.parametrize(
    "answer",
    [
        hostile.data({"name": "x.png"}),  # no url
        hostile.data({"url": "https://elsewhere.example/_sandbox/uploads/x.png"}),  # not this machine
        hostile.data({"url": "http://127.0.0.1:1/_sandbox/keys"}),  # not an upload
        hostile.Answer(201, b"<html>not json</html>", {"Content-Type": "text/html"}),
    ],
    ids=["no url", "another host", "another path", "not json"],
)
def test_a_sandbox_answering_an_upload_oddly_is_one_typed_error(
    tmp_path: Path, answer: hostile.Answer
) -> None:
    """The URL a sandbox answers for an upload becomes an input: it must be one of its own uploads."""
    face = tmp_path / "face.png"
    Image.new("RGB", (8, 8)).save(face)
    with hostile.serve() as server, Client("pk_live_x", base_url=server.base_url) as client:
        server.on("GET", "/v3/playground/v1/models", hostile.data({"models": [IMAGE_MODEL]}))
        server.on("PUT", "/_sandbox/uploads/", answer)
        with pytest.raises(
            errors.ServiceResponseError, match=r"holds no upload URL of its own \(data\.url\)"
        ):
            client.run("img-edit", image=face)
        assert server.starts() == 0


def test_a_sandbox_that_is_gone_is_one_upload_failed_line(tmp_path: Path) -> None:
    face = tmp_path / "face.png"
    Image.new("RGB", (8, 8)).save(face)
    with hostile.serve() as server:
        server.on("GET", "/v3/playground/v1/models", hostile.data({"models": [IMAGE_MODEL]}))
        client = Client("pk_live_x", base_url=server.base_url)
        client.models()  # the catalog is read while the server is up
    with client, pytest.raises(UploadFailed, match=r"^cannot upload face\.png to the sandbox at http://127"):
        client.run("img-edit", image=face)


def test_a_picked_file_is_named_by_its_content_never_by_the_browsers_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    png = io.BytesIO()
    Image.new("RGB", (4, 4)).save(png, format="PNG")
    kept = uploads.keep("../../x." + "a" * 300, png.getvalue())
    assert kept.parent == tmp_path / "cache" / "mediagen_nb" / "picked"
    assert kept.name == hashlib.sha256(png.getvalue()).hexdigest()[:32] + ".png"
    assert uploads.keep("notes.txt", b"just words").suffix == ""
