"""Colab, VS Code and saved notebooks (issue 23): both widget lines, output that survives every front
end, output of background threads in the cell that started the work, and Colab's secrets.

These run in both of CI's environments: the dev one (IPython 9, ipywidgets 8, ipykernel 7) and the
one pinned to Colab's runtime (IPython 7.34, ipywidgets 7.7, ipykernel 6.17; `.ci/run`).
"""

import getpass
import sys
import types
from pathlib import Path
from typing import Any

import nbformat
import pytest
from _shell import TIME_SCALE, Notebook
from IPython.utils.capture import capture_output
from nbclient import NotebookClient

from mediagen_nb.client import html, settings
from mediagen_nb.notebook import compat
from mediagen_nb.sandbox import Sandbox

WIDGET = compat.WIDGET_VIEW


def test_a_picked_file_reads_the_same_from_either_widget_line() -> None:
    seven = {"voice.wav": {"content": b"RIFF7", "metadata": {"name": "voice.wav", "size": 5}}}
    eight = ({"name": "voice.wav", "content": memoryview(b"RIFF8"), "size": 5},)
    assert compat.picked_files(seven) == [("voice.wav", b"RIFF7")]
    assert compat.picked_files(eight) == [("voice.wav", b"RIFF8")]
    assert compat.picked_files(()) == [] and compat.picked_files({}) == []


def test_a_form_and_the_catalog_say_what_to_do_where_no_widget_shows(nb: Notebook) -> None:
    """Shown in a cell: the widget, then a static line that stays in a saved or exported notebook,
    with the form's run as code (the same run: copied after the form, it is reused at no charge)."""
    with capture_output() as shown:
        nb.ok("import mediagen_nb as mg\nf = mg.form('gpt-image-2')\nf.set(prompt='a <b>lighthouse</b>')\nf")
    bundles = [output.data for output in shown.outputs]
    assert len(bundles) == 2 and WIDGET in bundles[0] and "text/html" not in bundles[0]
    assert bundles[0][WIDGET]["model_id"] == nb.ns["f"].widget.model_id
    note = bundles[1]["text/html"]
    assert "No form above?" in note and "JupyterLab, Colab or VS Code" in note
    assert "%%generate gpt-image-2" in note and "a &lt;b&gt;lighthouse&lt;/b&gt;" in note  # escaped
    text = nb.ns["f"]._repr_mimebundle_()["text/plain"]
    assert "No form above?" in text and "client.generate(" in text
    with capture_output() as shown:
        nb.ok("mg.catalog()")
    assert WIDGET in shown.outputs[0].data
    assert "%mediagen models" in shown.outputs[1].data["text/html"]
    nb.ns["f"].close()


def test_video_and_audio_carry_a_download_link() -> None:
    for kind, url in (("video", "https://cdn.example.org/a.mp4"), ("audio", "https://cdn.example.org/a.wav")):
        shown = html.media(url, kind)
        assert f"<{kind} src=" in shown and f'<a href="{url}" download' in shown
    assert "download" not in html.media("https://cdn.example.org/a.png", "image")
    assert html.download("javascript:alert(1)") == ""


def test_the_key_comes_from_colab_secrets_when_the_notebook_has_them(
    nb: Notebook, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    key = nb.new_key(name="colab")
    secrets = {settings.ENV_KEY: key, settings.ENV_BASE_URL: str(nb.sandbox.base_url)}

    def get(name: str) -> str:
        if name not in secrets:
            raise LookupError(name)  # Colab raises SecretNotFoundError
        return secrets[name]

    colab = types.ModuleType("google.colab")
    colab.userdata = types.SimpleNamespace(get=get)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setattr(getpass, "getpass", lambda prompt="": pytest.fail("asked although Colab has it"))
    monkeypatch.delenv(settings.ENV_BASE_URL, raising=False)
    monkeypatch.setenv(settings.ENV_TIME_SCALE, str(TIME_SCALE))
    assert nb.run("%mediagen key").success
    value = nb.ok("%%generate gpt-image-2\na cat")
    assert nb.generation(value).caller.key.secret == key
    out, err = capsys.readouterr()
    assert key not in out + err and all(key not in repr(v) for v in list(nb.ns.values()))

    del secrets[settings.ENV_KEY]  # not granted to this notebook: asked with getpass instead
    monkeypatch.setattr(getpass, "getpass", lambda prompt="": "  ")
    assert nb.usage_error("%mediagen key") == "no key entered; nothing changed"


def kernels_reach(served: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels the test starts (they inherit this environment) use ``served``, at its clock."""
    monkeypatch.setenv(settings.ENV_KEY, served.demo_key)
    monkeypatch.setenv(settings.ENV_BASE_URL, str(served.base_url))
    monkeypatch.setenv(settings.ENV_TIME_SCALE, str(TIME_SCALE))


def _cells(*sources: str) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    return notebook


def test_in_a_real_kernel_background_output_stays_in_its_cell(
    served: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The done-when of issue 23, in this environment's own kernel: ``%load_ext``, a ``%%generate``
    cell, a form, a sweep with its live preview and ``%mediagen usage``. The preview fills in from a
    thread while later cells run, and its drawings stay in its own cell (display_id updates), so the
    saved notebook keeps the final gallery there and the later cells hold only their own output."""
    kernels_reach(served, monkeypatch)
    prompts = [f"a lighthouse, take {i}" for i in range(6)]
    notebook = _cells(
        "%load_ext mediagen_nb\nimport pandas as pd, mediagen_nb as mg",
        "%%generate gpt-image-2 --quality low -o face\nA studio portrait",
        f"handle = pd.DataFrame({{'prompt': {prompts!r}}}).mediagen.submit('gpt-image-2', quality='low')\n"
        "handle.preview(live=True)",
        "print('the next cell')",
        "done = handle.result()",
        "mg.form('gpt-image-2')",
        "%mediagen usage",
    )
    NotebookClient(
        notebook, timeout=240, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    ).execute()
    outputs = [cell.outputs for cell in notebook.cells]
    errors = [o for cell in outputs for o in cell if o.output_type == "error"]
    assert not errors, errors
    face = [o for o in outputs[1] if "text/html" in o.get("data", {})]
    assert face and "<img " in face[-1].data["text/html"]
    gallery = [o.data["text/html"] for o in outputs[2] if "<img " in o.get("data", {}).get("text/html", "")]
    assert len(gallery) == 1 and gallery[0].count("<img ") == len(prompts)  # the final drawing, in place
    # No drawing strayed here: only the print, whose text may come as more than one stream message (one
    # run got 'the next cell' and '\n' apart while the preview's thread was drawing); front ends join them.
    assert [(o.output_type, o.get("name")) for o in outputs[3]] == [("stream", "stdout")] * len(outputs[3])
    assert "".join(o.text for o in outputs[3]) == "the next cell\n"
    assert "6 succeeded" in "".join(o.get("text", "") for o in outputs[4])
    assert WIDGET in outputs[5][0].data and "No form above?" in outputs[5][1].data["text/html"]
    assert "gpt-image-2" in outputs[6][0].data["text/html"]
    nbformat.write(notebook, tmp_path / "saved.ipynb")


def test_on_colab_a_sandbox_s_previews_are_inlined(monkeypatch: pytest.MonkeyPatch) -> None:
    """Colab's browser cannot reach the runtime's 127.0.0.1: the preview path inlines the media there."""
    from mediagen_nb.client import previews

    monkeypatch.delenv(settings.ENV_PREVIEW, raising=False)
    monkeypatch.delenv("JUPYTERHUB_SERVICE_PREFIX", raising=False)
    previews.preview_mode(None)
    assert previews.preview_mode() == "direct"
    monkeypatch.setenv("COLAB_RELEASE_TAG", "release-colab-20260819")
    assert previews.preview_mode() == "inline"
    assert previews.shown("https://cdn.example.org/a.png", "image") == "https://cdn.example.org/a.png"


def test_what_a_thread_prints_goes_to_the_cell_that_started_it(tmp_path: Path) -> None:
    """A text progress bar redrawn from the loop thread writes under the starting cell's parent where
    the kernel lets a thread have one (ipykernel 7 and later): never into the cell that runs now."""
    import ipykernel

    if int(ipykernel.__version__.split(".")[0]) < 7:
        pytest.skip("ipykernel 6 has one parent per process: live views use display_id updates there")
    notebook = _cells(
        "import threading\nfrom mediagen_nb.batch import routing\n"
        "ready, printed = threading.Event(), threading.Event()\nroute = routing.here()\n"
        "def late():\n    ready.wait(30)\n    with route.applied():\n        print('from the thread')\n"
        "    print('unrouted')\n    printed.set()\n"
        "threading.Thread(target=late).start()",
        "ready.set()\nprinted.wait(30)\nprint('the next cell')",  # still running while the thread prints
    )
    NotebookClient(
        notebook, timeout=60, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    ).execute()
    later = "".join(o.get("text", "") for o in notebook.cells[1].outputs)
    assert "the next cell" in later and "unrouted" in later  # the newest cell's, without a route
    assert "from the thread" not in later  # routed to its own cell (nbclient no longer listens there)


def test_a_live_preview_finished_between_cells_is_in_the_saved_notebook(
    served: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live preview's last drawings may come while no cell runs (its sweep ended as its cell did).
    nbclient, as ``nbconvert --execute``, takes a thread's drawing only while the cell it came from
    runs, so they were lost: the saved notebook kept a half-drawn gallery (1 of 6 images, seen under a
    CPU hog). ``handle.result()`` now draws it once more from its own cell."""
    kernels_reach(served, monkeypatch)
    prompts = [f"a harbour, take {i}" for i in range(4)]
    notebook = _cells(
        "%load_ext mediagen_nb\nimport pandas as pd",
        f"handle = pd.DataFrame({{'prompt': {prompts!r}}}).mediagen.submit('gpt-image-2', quality='low')\n"
        "handle.preview(live=True)",
        "done = handle.result()",
    )
    client = NotebookClient(
        notebook, timeout=240, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    )

    async def drawn_while_no_cell_runs(cell: Any, cell_index: int, execute_reply: Any) -> None:
        """After the preview's cell: take the kernel's messages until the preview's thread is done (its
        full drawing goes by twice: for the last row, then the final one), as if none ran."""
        full = 0
        while cell_index == 1 and full < 2:
            message = await client.kc.get_iopub_msg(timeout=120)
            html = message["content"].get("data", {}).get("text/html", "")
            full += message["msg_type"] == "update_display_data" and html.count("<img ") == len(prompts)

    client.on_cell_executed = drawn_while_no_cell_runs
    client.execute()
    outputs = [cell.outputs for cell in notebook.cells]
    assert not [o for cell in outputs for o in cell if o.output_type == "error"]
    gallery = [o.data["text/html"] for o in outputs[1] if "text/html" in o.get("data", {})]
    assert len(gallery) == 1 and gallery[0].count("<img ") == len(prompts), gallery
