"""A path in a table is sent only where the user meant it: media of the field's kind, from the working
folder (the sheet's folder for ``mediagen sweep``) or a folder the user allows; an estimate uploads nothing.

The attack of issue 19: a frame from someone else whose ``image`` column holds
``~/.config/…/credentials.json`` made even a free ``df.mediagen.estimate("infinitetalk")`` upload it,
priced as an image, and the sandbox then served it to anyone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pandas as pd
import pytest
from _shared import wav

from mediagen_nb.batch.cli import main
from mediagen_nb.client import settings
from mediagen_nb.client.uploads import UPLOADED

if TYPE_CHECKING:
    from conftest import Service


def voice(target: Path, seconds: float) -> Path:
    """A real WAV file of ``seconds`` of quiet sound."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(wav(seconds))
    return target


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME with a credentials file in ~/.config, and a project folder that is the working folder."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    secret = tmp_path / "home" / ".config" / "gcloud" / "credentials.json"
    secret.parent.mkdir(parents=True)
    secret.write_text('{"client_secret": "do-not-send"}')
    project = tmp_path / "home" / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    return tmp_path / "home"


def face(service: Service, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(httpx.get(service.sample("face.png"), timeout=30).content)
    return target


def nothing_sent(service: Service, before: int) -> None:
    assert UPLOADED.sent == before
    assert service.sandbox.world.uploads.stored() == []
    assert service.ledger() == []


def test_a_credentials_file_in_a_frame_is_never_uploaded_even_by_an_estimate(
    service: Service, home: Path
) -> None:
    talk = voice(home / "project" / "talk.wav", 4)
    frame = pd.DataFrame({"image": ["~/.config/gcloud/credentials.json"], "audio": [str(talk)]})
    before = UPLOADED.sent
    priced = frame.mediagen.estimate("infinitetalk", client=service.client, show=False)
    error = priced["error"][0]
    assert pd.isna(priced["credits"][0])
    assert error.startswith(f"image: {str(home / '.config/gcloud/credentials.json')!r} is outside ")
    assert "allow_files_from=" in error and str(home / ".config" / "gcloud") in error
    done = frame.mediagen.run("infinitetalk", client=service.client, progress=False)
    assert list(done["status"]) == ["invalid"] and done["error"][0] == error
    assert service.count("estimate", "run") == 0
    nothing_sent(service, before)
    # Allowing its folder does not make it media: it is refused by its content, still never read out.
    allowed = frame.mediagen.estimate(
        "infinitetalk", client=service.client, show=False, allow_files_from=home / ".config" / "gcloud"
    )
    assert "credentials.json' is not media, and only an image file is sent here" in allowed["error"][0]
    nothing_sent(service, before)


def test_a_media_file_outside_the_working_folder_needs_its_folder_allowed(
    service: Service, home: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "shared"
    image = face(service, elsewhere / "face.png")
    inside = face(service, home / "project" / "faces" / "me.png")
    talk = voice(elsewhere / "talk.wav", 6)
    frame = pd.DataFrame({"image": [str(image), "faces/me.png"], "audio": [str(talk), str(talk)]})
    before = UPLOADED.sent
    priced = frame.mediagen.estimate("infinitetalk", client=service.client, show=False, resolution="480p")
    assert [e.split(" is outside")[0] for e in priced["error"]] == [
        f"image: {str(image)!r}",
        f"audio: {str(talk)!r}",
    ]
    assert f"allow_files_from={str(elsewhere)!r}" in priced["error"][0]
    nothing_sent(service, before)

    priced = frame.mediagen.estimate(
        "infinitetalk", client=service.client, show=False, resolution="480p", allow_files_from=[elsewhere]
    )
    assert list(priced["credits"]) == [12, 12]  # 2 credits a second of audio at 480p, measured here
    assert "talk.wav measured here" in priced["billing"][0]
    nothing_sent(service, before)  # an estimate uploads nothing
    done = frame.mediagen.run(
        "infinitetalk",
        client=service.client,
        progress=False,
        resolution="480p",
        allow_files_from=str(elsewhere),
    )
    assert list(done["status"]) == ["succeeded", "succeeded"]
    charged = service.charges()
    assert [service.net_spent(), len(charged)] == [24, 2]  # each charge equals its estimate
    assert UPLOADED.sent - before == 2  # the two faces are the same bytes: one upload, and the voice
    assert inside.exists()


def test_a_symlink_into_another_folder_is_judged_where_it_leads(
    service: Service, home: Path, tmp_path: Path
) -> None:
    talk = voice(tmp_path / "private" / "talk.wav", 3)
    link = home / "project" / "talk.wav"
    os.symlink(talk, link)
    frame = pd.DataFrame({"text": ["Hello"], "audio": ["talk.wav"]})
    priced = frame.mediagen.estimate("zonos2", client=service.client, show=False)
    assert priced["error"][0].startswith("audio: 'talk.wav' is outside ")
    assert f"allow_files_from={str(tmp_path / 'private')!r}" in priced["error"][0]


def test_the_polars_accessor_follows_the_same_rule(service: Service, home: Path) -> None:
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"text": ["Hello"], "audio": ["~/.config/gcloud/credentials.json"]})
    before = UPLOADED.sent
    priced = frame.mediagen.estimate("zonos2", client=service.client, show=False)
    assert priced["error"][0].startswith(
        f"audio: {str(home / '.config/gcloud/credentials.json')!r} is outside "
    )
    nothing_sent(service, before)


def test_a_bad_allow_files_from_is_refused_naming_it(service: Service, home: Path) -> None:
    frame = pd.DataFrame({"text": ["Hello"], "audio": ["talk.wav"]})
    with pytest.raises(Exception, match=r"^allow_files_from: there is no folder 'nowhere'$"):
        frame.mediagen.estimate("zonos2", client=service.client, show=False, allow_files_from="nowhere")


# -- mediagen sweep: the sheet's folder, and --files-from ----------------------------------------------


def test_a_sweep_sends_only_files_beside_its_sheet_or_from_files_from(
    service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(settings.ENV_BASE_URL, service.base_url)
    monkeypatch.setenv(settings.ENV_KEY, service.sandbox.demo_key)
    monkeypatch.setenv(settings.ENV_TIME_SCALE, str(service.sandbox.config.time_scale))
    monkeypatch.chdir(tmp_path)
    beside = voice(tmp_path / "sheets" / "voices" / "a.wav", 10)
    other = voice(tmp_path / "recordings" / "b.wav", 20)
    sheet = tmp_path / "sheets" / "voices.csv"
    sheet.write_text(f"text,audio\nOne,{beside}\nTwo,{other}\n")
    before = UPLOADED.sent

    code = main([str(sheet), "--model=zonos2", "--estimate"])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in out + err
    assert f"audio: {str(other)!r} is outside {tmp_path / 'sheets'}" in err
    assert f"--files-from {tmp_path / 'recordings'}" in err
    nothing_sent(service, before)

    code = main([str(sheet), "--model=zonos2", f"--files-from={tmp_path / 'recordings'}"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "zonos2 on " in out and ": 15 credits for 2 rows" in out  # 5 + 10, measured before the run
    assert service.net_spent() == 15 and UPLOADED.sent - before == 2

    code = main([str(sheet), "--model=zonos2", "--files-from=nowhere"])
    assert (
        code == 2 and "mediagen sweep: --files-from: there is no folder 'nowhere'" in capsys.readouterr().err
    )
