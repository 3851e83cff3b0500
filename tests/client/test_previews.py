"""Where previews load media from: direct, through the Jupyter server (proxy), or inlined."""

import base64
from collections.abc import Iterator

import httpx
import pytest

from mediagen_nb.client import Client, html, previews, settings
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox


@pytest.fixture(autouse=True)
def default_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(settings.ENV_PREVIEW, raising=False)
    monkeypatch.delenv("JUPYTERHUB_SERVICE_PREFIX", raising=False)
    previews.preview_mode(None)
    yield
    previews.preview_mode(None)


def test_direct_by_default_and_the_service_always_direct(monkeypatch: pytest.MonkeyPatch) -> None:
    local = "http://127.0.0.1:8765/_sandbox/media/a.png"
    assert previews.preview_mode() == "direct" and previews.shown(local, "image") == local
    previews.preview_mode("inline")
    public = "https://cdn.example.org/out/a.png"
    assert previews.shown(public, "image") == public  # only a sandbox on this machine is rewritten


def test_proxy_goes_through_the_jupyter_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/ada/")
    previews.preview_mode("proxy")
    shown = previews.shown("http://127.0.0.1:8765/_sandbox/media/a.png?v=1", "image")
    assert shown == "/user/ada/proxy/8765/_sandbox/media/a.png?v=1"
    assert 'src="/user/ada/proxy/8765/_sandbox/media/a.png?v=1"' in html.media(
        "http://127.0.0.1:8765/_sandbox/media/a.png?v=1", "image"
    )
    monkeypatch.setenv(settings.ENV_PREVIEW, "proxy")
    previews.preview_mode(None)
    assert previews.preview_mode() == "proxy"  # the environment's choice
    with pytest.raises(ValueError, match="use one of auto, direct, proxy, inline"):
        previews.preview_mode("iframe")


def test_inline_keeps_pictures_in_the_output(served: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    with Client(served.demo_key, base_url=served.base_url, time_scale=600) as client:
        made = client.generate("flare-1-swift", prompt="a lighthouse kept inline")
    assert made.url is not None
    previews.preview_mode("inline")
    card = made._repr_html_()
    assert 'src="data:image/png;base64,' in card and made.url not in card.split("src=")[1][:80]
    encoded = card.split('src="data:image/png;base64,', 1)[1].split('"', 1)[0]
    assert base64.b64decode(encoded) == httpx.get(made.url, timeout=10).content
    monkeypatch.setattr(previews, "INLINE_LIMIT", 1000)  # a larger voice stays a link to its player
    voice = f"{served.base_url}{path('sandbox_samples', name='voice.wav')}"
    assert f'src="{voice}"' in html.media(voice, "audio")


def test_links_and_media_made_in_a_notebook_take_the_preview_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20: a replica's share link, ``%mediagen history`` links and hand-made players went to
    127.0.0.1 on Binder. Links are proxied like media (never inlined); ``mg.Media`` is the player."""
    from mediagen_nb.client import Media, ReplicationRun
    from mediagen_nb.notebook.tables import HistoryTable

    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/ada/")
    previews.preview_mode("proxy")
    base, proxied = "http://127.0.0.1:8765", "/user/ada/proxy/8765"
    run = ReplicationRun.from_api(
        {
            "id": "run-1",
            "status": "done",
            "outputVideoUrl": f"{base}/_sandbox/media/replica.mp4",
            "compareVideoUrl": f"{base}/_sandbox/media/compare.mp4",
            "shareUrl": f"{base}/_sandbox/app/r/run-1",
        }
    )
    card = run._repr_html_()
    assert f'href="{proxied}/_sandbox/app/r/run-1"' in card
    assert f'src="{proxied}/_sandbox/media/compare.mp4"' in card and f'"{base}' not in card
    history = HistoryTable([run])._repr_html_()
    assert f'href="{proxied}/_sandbox/media/replica.mp4"' in history and f'"{base}' not in history
    player = Media(f"{base}/_sandbox/media/talk.mp4", width=480, caption="a <b>cut</b>")._repr_html_()
    assert f'<video src="{proxied}/_sandbox/media/talk.mp4"' in player
    assert "max-width:480px" in player and "a &lt;b&gt;cut&lt;/b&gt;" in player
    assert (
        f'<img src="{proxied}/_sandbox/media/face.png"'
        in Media(f"{base}/_sandbox/media/face.png")._repr_html_()
    )
    previews.preview_mode("inline")  # a page cannot be inlined: the link stays a link
    assert html.link(f"{base}/_sandbox/app/r/run-1") == (
        f'<a href="{base}/_sandbox/app/r/run-1" target="_blank" rel="noopener noreferrer">'
        f"{base}/_sandbox/app/r/run-1</a>"
    )
    previews.preview_mode("direct")
    public = "https://example.org/v.mp4"
    assert f'href="{public}"' in html.link(public) and f'src="{public}"' in Media(public)._repr_html_()
