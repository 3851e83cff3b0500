"""``df.mediagen.download`` of a frame from someone else: nothing lands outside, no row stops others.

The frame's ids are paths, its URLs end in ``.py`` or in a 300-character extension, a link to a file
outside waits in the folder under the name a row will take. The outputs are served over real HTTP by
the scripted server of ``tests/_hostile.py``, as ``image/png``; a sweep run on that server, which
answers paths for ids, keeps no id and saves nothing.
"""

from pathlib import Path

import pandas as pd
import pytest
from _hostile import GENERATION_ID, Answer, generation, serve

import mediagen_nb  # noqa: F401  (registers df.mediagen)
from mediagen_nb.client import Client

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
HOSTILE_IDS = [
    "../../../../somewhere/PWNED",
    "/an/absolute/path/PWNED4",
    f"{GENERATION_ID}/../../../somewhere/PWNED2",
    "../.ipython/profile_default/startup/PWNED3",
]


def every_file(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def test_ids_and_extensions_from_a_frame_never_name_a_place_outside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "home" / "out"
    with serve() as server:
        server.on("GET", "/media/", Answer(200, PNG, {"Content-Type": "image/png"}))
        frame = pd.DataFrame(
            {
                "generation_id": HOSTILE_IDS,
                "output_url": [f"{server.base_url}/media/{n}.py" for n in range(len(HOSTILE_IDS))],
                "status": "succeeded",
            }
        )
        before = every_file(tmp_path)
        saved = frame.mediagen.download(folder, name="{id}", progress=False)
    made = every_file(tmp_path) - before
    assert made and all(p.parent == folder for p in made)  # every file (and sidecar) in the folder
    names = {Path(p).name for p in saved["local_path"]}
    assert names == {
        "an-absolute-path-PWNED4.png",
        "ipython-profile_default-startup-PWNED3.png",
        "somewhere-PWNED.png",
        f"{GENERATION_ID}-somewhere-PWNED2.png",
    }
    assert saved["download_error"].isna().all() and capsys.readouterr().err == ""
    assert not (tmp_path / "home" / ".ipython").exists()


def test_one_rows_failure_never_stops_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, outside = tmp_path / "out", tmp_path / "elsewhere"
    folder.mkdir()
    outside.mkdir()
    with serve() as server:
        server.on("GET", "/media/", Answer(200, PNG, {"Content-Type": "image/png"}))
        base = server.base_url + "/media"
        frame = pd.DataFrame(
            {
                "label": ["long", "gone", "trap", "local", "fine", "odd"],
                "credits": [3, 3, 3, 3, 3, "three"],
                "output_url": [
                    f"{base}/a." + "x" * 300,  # a 300-character extension: aborted every row before
                    server.base_url + "/nothing/here.png",  # 404
                    f"{base}/b.png",
                    "file:///etc/passwd",
                    f"{base}/c.png",
                    f"{base}/d.png",
                ],
            }
        )
        (folder / "trap-3.png").symlink_to(outside / "trap.png")  # where the "trap" row would be saved
        saved = frame.mediagen.download(folder, name="{label}-{credits:d}", progress=False)
    errors = dict(zip(saved["label"], saved["download_error"], strict=True))
    paths = dict(zip(saved["label"], saved["local_path"], strict=True))
    assert Path(paths["long"]).name == "long-3.png" and Path(paths["long"]).read_bytes() == PNG
    assert Path(paths["fine"]).name == "fine-3.png" and pd.isna(errors["fine"])
    assert "404" in errors["gone"] and "leads outside" in errors["trap"]
    assert "not an http(s) media URL" in errors["local"]
    assert "cannot be filled for this row" in errors["odd"]
    assert not list(outside.iterdir())
    assert "4 of 6 files could not be downloaded" in capsys.readouterr().err


def test_a_sweep_on_a_server_answering_paths_for_ids_saves_nothing(tmp_path: Path) -> None:
    with serve() as server:
        server.catalog()
        answer = generation(HOSTILE_IDS[0], server.base_url + "/media/x.py")
        server.on("POST", "/v3/playground/v1/run", answer)
        server.on("GET", "/v3/playground/v1/generations/", answer)
        client = Client(
            "pk_live_hostile",
            base_url=server.base_url,
            time_scale=600,
            ledger=str(tmp_path / "ledger.sqlite"),
        )
        with client:
            done = pd.DataFrame({"prompt": ["a fox", "an owl"]}).mediagen.run(
                "gpt-image-2", client=client, progress=False
            )
            saved = done.mediagen.download(tmp_path / "out", progress=False)
    assert done["generation_id"].isna().all() and (done["status"] != "succeeded").all()
    assert done["error"].str.contains("Generation.id").all()
    assert saved["local_path"].isna().all() and not list((tmp_path / "out").iterdir())
