"""``mediagen sweep`` on a served sandbox: exit codes, one-line reasons grouped by cause, nothing lost.

Exit 0: every row succeeded. 1: rows could not be run or failed (reasons grouped, with counts).
2: a mistake to fix before anything runs; then nothing is charged. Never a traceback. With
``--json``, one JSON document on stdout: the outcome, or the mistake.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from mediagen_nb.client import settings
from mediagen_nb.client.context import PROCESS

if TYPE_CHECKING:
    from conftest import Service

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def sheet(tmp_path: Path) -> Path:
    path = tmp_path / "prompts.csv"
    path.write_text("Subject,quality\ncat,low\ndog,low\nfox,low\n")
    return path


def test_a_good_sweep_exits_0_and_writes_its_results(
    cli: Cli, service: Service, sheet: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out" / "results.json"
    code, printed, _ = cli(str(sheet), "--model=gpt-image-2", "--template=prompt=A {Subject}", f"--out={out}")
    assert code == 0 and out.exists() and "3 succeeded" in printed
    assert service.net_spent() == 9


def test_every_row_invalid_exits_1_with_the_reason_and_charges_nothing(
    cli: Cli, service: Service, tmp_path: Path
) -> None:
    sheet = tmp_path / "bad.csv"
    sheet.write_text("prompt,quality\na,ultra\nb,ultra\n")
    code, _, err = cli(str(sheet), "--model=gpt-image-2")
    assert code == 1
    assert "2 invalid: quality must be one of: low, medium, high (rows 2, 3)" in err  # the header is row 1
    code, _, err = cli(str(sheet), "--model=gpt-image-2", "--estimate")
    assert code == 1 and "2 invalid: quality must be one of: low, medium, high (rows 2, 3)" in err
    assert service.charges() == {}


def test_rows_are_numbered_as_the_sheet_numbers_them_with_or_without_estimate(
    cli: Cli, service: Service, tmp_path: Path
) -> None:
    """Issue 20: ``--estimate`` numbered the invalid rows among themselves (rows 1, 2 for rows 3, 5)."""
    sheet = tmp_path / "mixed.csv"
    sheet.write_text("prompt,quality\na,low\nb,ultra\nc,low\nd,ultra\n")
    code, printed, err = cli(str(sheet), "--model=gpt-image-2", "--estimate")
    assert code == 1 and "2 invalid: quality must be one of: low, medium, high (rows 3, 5)" in err
    assert "largest rows: row 2: 3, row 4: 3" in printed  # the same numbers in the estimate's summary
    code, _, err = cli(str(sheet), "--model=gpt-image-2")
    assert code == 1 and "(rows 3, 5)" in err
    assert service.net_spent() == 6


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("wrong key", "AuthenticationError: 401 Invalid, expired, or revoked API key"),
        ("suspended", "403 Your account has been suspended."),
    ],
)
def test_a_wrong_key_or_a_suspended_account_is_said_and_exits_non_zero(
    cli: Cli, service: Service, sheet: Path, monkeypatch: pytest.MonkeyPatch, setup: str, expected: str
) -> None:
    if setup == "wrong key":
        monkeypatch.setenv(settings.ENV_KEY, "pk_live_not_a_key_of_this_sandbox")
    else:
        service.control("sandbox_account", {"suspended": True})
    code, _, err = cli(str(sheet), "--model=gpt-image-2", "--template=prompt=A {Subject}")
    assert code != 0 and expected.split(": ", 1)[-1] in err
    assert service.charges() == {}


@pytest.mark.parametrize(
    ("content", "argv", "expected"),
    [
        (b"", [], "is empty: it needs a header row"),
        (
            "prompt\ncaf\xe9\n".encode("latin-1"),
            [],
            "is not utf-8 text: save it as UTF-8 CSV, or pass --encoding",
        ),
        (
            b"subject\ncat\n",
            ["--template=prompt=A {subject!r}"],
            "--template: template 'A {subject!r}': use plain",
        ),
        (
            b"subject\ncat\n",
            ["--map=prompt=subject"],
            "--map: 'prompt' is not a column; the map goes COLUMN=FIELD: write --map subject=prompt",
        ),
        (
            b"prompt\ncat\n",
            ["--out=results.txt"],
            "--out results.txt: write one of .csv, .tsv, .xlsx, .json, .parquet",
        ),
        (b"prompt\ncat\n", ["--map=Subject=prompt"], "--map: 'Subject' is not a column of the sheet"),
    ],
)
def test_mistakes_are_one_line_exit_2_and_nothing_is_charged(
    cli: Cli,
    service: Service,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    content: bytes,
    argv: list[str],
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    sheet = tmp_path / "sheet.csv"
    sheet.write_bytes(content)
    code, _, err = cli(str(sheet), "--model=gpt-image-2", *argv)
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err
    assert service.charges() == {}


def test_an_unwritable_output_is_refused_before_anything_is_spent(
    cli: Cli, service: Service, sheet: Path, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("x")
    code, _, err = cli(
        str(sheet), "--model=gpt-image-2", "--template=prompt=A {Subject}", f"--out={tmp_path}/a-file/r.csv"
    )
    assert code == 2 and "cannot be written" in err and service.charges() == {}


def test_a_broken_ledger_is_one_line_before_anything_is_charged(
    cli: Cli, service: Service, sheet: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    ledger.write_bytes(b"not a database" * 100)
    code, _, err = cli(
        str(sheet), "--model=gpt-image-2", "--template=prompt=A {Subject}", f"--ledger={ledger}"
    )
    assert code == 2 and "LedgerError" in err and str(ledger) in err and service.charges() == {}


def test_mediagen_budget_caps_a_sweep_whose_rows_run_at_once(
    cli: Cli, service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``MEDIAGEN_BUDGET=12``: three 5-credit rows (started together) would pass it, so the sweep is one
    line, exit 2, and nothing is charged; two rows run and charge 10 (issue 35)."""
    monkeypatch.setenv(settings.ENV_BUDGET, "12")
    monkeypatch.setattr(PROCESS, "budget", None)  # as in a new process: the budget is read on first use
    three, two = tmp_path / "three.csv", tmp_path / "two.csv"
    three.write_text("prompt\na cat\na dog\na fox\n")
    two.write_text("prompt\na cat\na dog\n")
    code, _, err = cli(str(three), "--model=flare-1-pro")
    assert code == 2 and "budget: this sweep would cost 15 credits" in err and service.charges() == {}
    code, printed, _ = cli(str(two), "--model=flare-1-pro")
    assert code == 0 and "2 succeeded" in printed and service.net_spent() == 10


def test_a_near_miss_column_is_a_one_line_warning(cli: Cli, service: Service, tmp_path: Path) -> None:
    sheet = tmp_path / "s.csv"
    sheet.write_text("prompt,aspect\na fox,3:2\n")
    code, _, err = cli(str(sheet), "--model=gpt-image-2", "--estimate")
    assert code == 0
    assert "mediagen sweep: warning: column 'aspect' is not used; if it is input 'aspect_ratio'" in err


def test_a_gallery_outlives_the_sandbox_that_made_it(
    cli: Cli, service: Service, sheet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outputs of a sandbox on this machine are saved beside the page, linked by relative paths."""
    page = tmp_path / "site" / "gallery.html"
    code, _, _ = cli(str(sheet), "--model=gpt-image-2", "--template=prompt=A {Subject}", f"--gallery={page}")
    assert code == 0
    files = sorted((tmp_path / "site" / "gallery_files").glob("*.png"))
    assert len(files) == 3 and all(f.with_name(f.name + ".json").exists() for f in files)
    html_text = page.read_text()
    assert service.base_url not in html_text  # nothing points at the sandbox, gone once the command exits
    for file in files:
        assert f'<img src="gallery_files/{file.name}"' in html_text
    monkeypatch.chdir(tmp_path)  # from another folder, the relative links still resolve beside the page
    assert all((page.parent / f"gallery_files/{f.name}").read_bytes()[:4] == b"\x89PNG" for f in files)
    service.sandbox.stop()
    again = sorted((tmp_path / "site" / "gallery_files").glob("*.png"))
    assert again == files


def test_json_prints_one_document_of_the_outcome(
    cli: Cli, service: Service, sheet: Path, tmp_path: Path
) -> None:
    argv = [str(sheet), "--model=gpt-image-2", "--template=prompt=A {Subject}", "--json"]
    code, printed, err = cli(*argv, "--estimate")
    nowhere = {"out": None, "gallery": None, "download": None}
    assert code == 0 and json.loads(printed) == {
        "ok": True,
        "rows": 3,
        "estimate": 9,
        "invalid": 0,
        **nowhere,
    }
    out = tmp_path / "results.csv"
    code, printed, err = cli(*argv, f"--out={out}")
    outcome = {"ok": True, "rows": 3, "status": {"succeeded": 3}, **nowhere, "out": str(out)}
    assert code == 0 and json.loads(printed) == outcome
    assert "3 succeeded" in err and out.exists()  # every other line went to stderr
    assert service.net_spent() == 9


@pytest.mark.parametrize(
    ("argv", "kind", "says"),
    [
        (
            ["{sheet}"],
            "Refused",
            "model: give --model (repeat it to compare models) or a table with a column",
        ),
        (["missing.csv", "--model=gpt-image-2"], "Refused", "no such file: missing.csv"),
        (["{sheet}", "--model=gpt-image-2", "--map=prompt=Subject"], "Refused", "the map goes COLUMN=FIELD"),
        (
            ["{sheet}", "--model=gpt-image-2", "--template=prompt=A {Subject}", "--key"],
            "Refused",
            "unrecognized",
        ),
        (["{sheet}", "--model=gpt-image-9"], "ValidationError", "gpt-image-9"),
    ],
)
def test_json_failures_are_one_document_exit_2(
    cli: Cli,
    service: Service,
    sheet: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    kind: str,
    says: str,
) -> None:
    monkeypatch.chdir(sheet.parent)
    code, printed, err = cli(*[a.replace("{sheet}", str(sheet)) for a in argv], "--json")
    document = json.loads(printed)
    assert code == 2 and document == {
        "ok": False,
        "error": {"type": kind, "message": document["error"]["message"], "exit": 2},
    }
    assert says in document["error"]["message"] and document["error"]["message"] in err
    assert service.charges() == {}
