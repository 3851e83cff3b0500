"""File names from untrusted parts (``mediagen_nb.client.files``) and saves that stay in their folder.

Names are built from ids, columns and numbers as an attacker would write them; the extension comes
from the output's media type; a place is proven inside its folder, links followed. A generation's
output whose URL ends in ``.py`` is saved, over real HTTP, as the image its media type says it is.
"""

from pathlib import Path

import pytest
from _hostile import GENERATION_ID, Answer, serve

from mediagen_nb.client import DownloadFailed, Generation, files

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


def succeeded(url: str, kind: str = "image") -> Generation:
    """A finished generation as a (hostile) server would answer it, its one output at ``url``."""
    output = {"type": kind, "urls": [url]}
    return Generation.from_api(
        {
            "id": GENERATION_ID,
            "modelId": "gpt-image-2",
            "status": "succeeded",
            "output": output,
            "creditsSpent": 8,
        }
    )


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (("../../../../somewhere/PWNED",), "somewhere-PWNED"),
        (("/an/absolute/path/PWNED4",), "an-absolute-path-PWNED4"),
        ((f"{GENERATION_ID}/../../x",), f"{GENERATION_ID}-x"),
        (("..",), "output"),
        ((".",), "output"),
        ((".hidden",), "hidden"),
        (("a\x00b\nc\r\td",), "a-b-c-d"),
        (("C:\\Windows\\win.ini",), "C-Windows-win.ini"),
        (("con",), "_con"),
        (("café ☕",), "caf"),
        (("x" * 400,), "x" * files.MAX_STEM),
        (("red", 0, None, ""), "red-0"),
    ],
)
def test_a_name_from_untrusted_parts_is_one_plain_short_name(
    parts: tuple[object, ...], expected: str
) -> None:
    made = files.name(*parts, extension=".png")
    assert made == expected + ".png"
    assert "/" not in made and "\\" not in made and not made.startswith(".")


def test_an_odd_extension_never_reaches_a_name() -> None:
    assert files.name("a", extension="." + "x" * 300) == "a.bin"
    assert files.name("a", extension="./../x") == "a.bin"
    assert files.name("a") == "a"


@pytest.mark.parametrize(
    ("kind", "url", "media_type", "expected"),
    [
        ("image", "https://cdn.test/out/a.webp", None, ".webp"),  # the URL's, of the right kind
        ("image", "https://cdn.test/out/a.py", None, ".png"),  # not a media extension: the kind's own
        ("image", "https://cdn.test/out/a.mp3", None, ".png"),  # a media extension of another kind
        ("image", "https://cdn.test/out/a.py", "image/jpeg; q=1", ".jpg"),  # the answer's type
        ("audio", "https://cdn.test/a.wav", "audio/mpeg", ".wav"),
        ("audio", "https://cdn.test/a." + "x" * 300, None, ".mp3"),
        (None, "https://cdn.test/a.mp4", None, ".mp4"),  # kind unknown: any media extension
        (None, "https://cdn.test/a.py", "text/x-python", files.UNKNOWN),
        (None, "https://cdn.test/download?id=3", "video/webm", ".webm"),
        ("../x", "https://cdn.test/a.html", "text/html", files.UNKNOWN),
        ("image", b"https://cdn.test/a.webp", None, ".png"),  # a URL that is not text says nothing
        ("image", 5, "image/jpeg", ".jpg"),
    ],
)
def test_the_extension_comes_from_the_media_type(
    kind: str | None, url: object, media_type: str | None, expected: str
) -> None:
    assert files.extension(kind, url, media_type) == expected


def test_a_place_is_proven_inside_its_folder_even_through_a_link(tmp_path: Path) -> None:
    folder, outside = tmp_path / "out", tmp_path / "elsewhere"
    folder.mkdir()
    outside.mkdir()
    assert files.inside(folder, "a.png") == folder / "a.png"
    (folder / "trap.png").symlink_to(outside / "trap.png")  # a link already in the folder
    with pytest.raises(DownloadFailed, match="leads outside"):
        files.inside(folder, "trap.png")
    (folder / "loop.png").symlink_to(folder / "loop.png")
    with pytest.raises(DownloadFailed, match=r"refused to save 'loop\.png' in"):
        files.inside(folder, "loop.png")
    for unsafe in ("../a.png", "/etc/passwd", "..", ".", "", "a\0b"):
        with pytest.raises(DownloadFailed, match="not a plain file name"):
            files.inside(folder, unsafe)
    assert not list(outside.iterdir())


def test_save_adds_the_media_types_extension_not_the_urls(tmp_path: Path) -> None:
    with serve() as server:
        server.on("GET", "/media/", Answer(200, PNG, {"Content-Type": "image/png"}))
        script = succeeded(server.base_url + "/media/startup.py")
        saved = script.save(tmp_path / "face")
        untyped = succeeded(server.base_url + "/media/startup.py", kind="strange")
        typed = untyped.save(tmp_path / "other")
        own = script.save(tmp_path / "mine.dat")  # the user's own extension is kept
    assert saved == tmp_path / "face.png" and saved.read_bytes() == PNG
    assert typed == tmp_path / "other.png"  # no kind to go by: the answer's Content-Type
    assert own == tmp_path / "mine.dat"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["face.png", "mine.dat", "other.png"]


def test_a_half_file_is_never_written_through_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "victim.txt"
    outside.write_text("keep me")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "face.png.part").symlink_to(outside)  # planted where the half file goes
    with serve() as server:
        server.on("GET", "/media/", Answer(200, PNG, {"Content-Type": "image/png"}))
        generation = succeeded(server.base_url + "/media/a.png")
        saved = generation.save(folder / "face.png")
    assert saved.read_bytes() == PNG and outside.read_text() == "keep me"


@pytest.mark.parametrize(
    ("parts", "fallback", "expected"),
    [
        (("X-ray", "box X"), "output", "X-ray-box-X"),  # letters at either end stay
        (("a", "", "b"), "output", "a-b"),  # an empty part adds no separator
        (("..",), "..", "output"),  # nothing safe, not even the fallback: "output"
        (("",), "", "output"),
        (("",), "row 7", "row-7"),  # the fallback, made safe
        (("a" * (files.MAX_STEM - 1) + "-b",), "output", "a" * (files.MAX_STEM - 1)),  # cut, no "-" left
        (("a" * (files.MAX_STEM - 1) + ".b",), "output", "a" * (files.MAX_STEM - 1)),
    ],
)
def test_a_name_keeps_what_is_safe_and_falls_back_when_nothing_is(
    parts: tuple[object, ...], fallback: str, expected: str
) -> None:
    assert files.name(*parts, fallback=fallback) == expected


def test_a_refused_name_is_said_in_at_most_80_characters(tmp_path: Path) -> None:
    long_name = "a/" + "b" * 200
    with pytest.raises(DownloadFailed) as refused:
        files.inside(tmp_path, long_name)
    assert refused.value.message == f"refused to save as {long_name[:80]!r}: not a plain file name"
    for unsafe in ("a\\b", "a\0b", "", ".", ".."):
        with pytest.raises(DownloadFailed, match="not a plain file name"):
            files.inside(tmp_path, unsafe)
    loop, trap = "l" * 100 + ".png", "t" * 100 + ".png"
    (tmp_path / loop).symlink_to(tmp_path / loop)
    with pytest.raises(DownloadFailed) as looped:
        files.inside(tmp_path, loop)
    assert looped.value.message.startswith(f"refused to save {loop[:80]!r} in {tmp_path}: ")
    (tmp_path / trap).symlink_to("/elsewhere/" + trap)
    with pytest.raises(DownloadFailed) as trapped:
        files.inside(tmp_path, trap)
    assert trapped.value.message.startswith(f"refused to save {trap[:80]!r}: {tmp_path / trap} leads outside")


def test_a_place_is_a_safe_name_inside_its_folder(tmp_path: Path) -> None:
    assert (
        files.place(tmp_path, "../x", GENERATION_ID, extension=".png") == tmp_path / f"x-{GENERATION_ID}.png"
    )
    assert files.place(tmp_path, "..", extension=".mp4", fallback="row 3") == tmp_path / "row-3.mp4"
    assert files.place(tmp_path, None, extension=".wav") == tmp_path / "output.wav"
