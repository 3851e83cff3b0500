"""A magic takes a local file: ``%%generate zonos2 --audio ./myvoice.wav`` uploads it and bills its length."""

from pathlib import Path

import pytest
from _shared import wav
from _shell import Notebook


def test_a_magic_takes_a_relative_path(nb: Notebook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "myvoice.wav").write_bytes(wav(20))
    made = nb.ok("%%generate zonos2 --audio ./myvoice.wav -o spoken\nHello from my own voice")
    assert made.status == "succeeded"
    assert nb.generation(made).input["audio"].endswith(".wav")
    assert [(c["resourceId"], c["credits"]) for c in nb.charges()] == [(made.id, 10)]  # 0.5 a second


def test_a_magic_sends_only_media_of_the_fields_kind(
    nb: Notebook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's own path needs no folder rule, but a file that is not audio never leaves."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "myvoice.wav").write_text('{"token": "not a recording"}')
    _, message = nb.error_kind("%%generate zonos2 --audio ./myvoice.wav\nHello")
    assert message.startswith("audio: 'myvoice.wav' is not media, and only an audio file is sent here")
    assert "\n" not in message
    assert nb.sent("sandbox_uploads") == [] and nb.sandbox.world.uploads.stored() == []
    assert nb.charges() == []
