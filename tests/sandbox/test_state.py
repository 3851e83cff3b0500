"""A sandbox with a data folder keeps everything it knows there and goes on from it when started again.

Each test serves a sandbox on a folder of its own, closes it, and serves a second one on the same folder:
what the first charged, made and was asked is what the second knows, nothing is charged twice, work in
flight finishes, and simulated time resumes where it stopped.
"""

import http.server
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx
import pytest
from _wait import wait_until

from mediagen_nb.protocol import messages, states, wire
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig
from mediagen_nb.sandbox.outbox import KEPT, KIND
from mediagen_nb.sandbox.state import StateError

SCALE = 600.0
REAL_TIME = 1.0  # nothing moves unless a test moves the clock (every run takes far longer than a test)
IMAGE = {"modelId": "gpt-image-2", "input": {"prompt": "a lighthouse at dawn", "quality": "low"}}
LATER = 3600.0  # simulated seconds after which every generation of these tests has ended


def config(folder: Path, scale: float = SCALE) -> SandboxConfig:
    return SandboxConfig(time_scale=scale, data_dir=folder, allow_private_webhooks=True)


class Api:
    """Sync HTTP to one served sandbox, with the demo key (or another); a connection per request, so
    none is left open when the sandbox stops."""

    def __init__(self, sandbox: Sandbox, key: str | None = None) -> None:
        assert sandbox.base_url is not None
        self.base_url = sandbox.base_url
        self.key = key or sandbox.demo_key

    def request(
        self, method: str, url: str, headers: dict[str, str] | None = None, **options: Any
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.key}", **(headers or {})}
        return httpx.request(
            method, self.base_url + url, headers=headers, timeout=30, trust_env=False, **options
        )

    def data(self, method: str, url: str, **options: Any) -> Any:
        response = self.request(method, url, **options)
        assert response.is_success, response.text
        return response.json()["data"]

    def run(self, body: dict[str, Any], key: str | None = None, **headers: str) -> httpx.Response:
        if key is not None:
            headers["Idempotency-Key"] = key
        return self.request("POST", path("run"), json=body, headers=headers)

    def settled(self, gen_id: str) -> dict[str, Any]:
        """The generation after its end (the clock is moved past it, then it is read)."""
        self.data("POST", path("sandbox_clock"), json={"advance": LATER})
        return self.data("GET", path("generation", id=gen_id))  # type: ignore[no-any-return]

    def snapshot(self) -> dict[str, Any]:
        info = self.data("GET", path("sandbox_info"))
        return {
            "instance": info["instance"],
            "seed": info["seed"],
            "counts": {k: v for k, v in info["counts"].items() if not k.startswith("request")},
            "ledger": self.data("GET", path("sandbox_ledger"))["entries"],
            "account": self.data("GET", path("sandbox_account")),
            "faults": {k: v for k, v in self.data("GET", path("sandbox_faults")).items()},
            # What was sent and where (its delivery result may come a moment later).
            "webhooks": [
                (w["url"], w["body"]) for w in self.data("GET", path("sandbox_webhooks"))["webhooks"]
            ],
        }


class Receiver(http.server.BaseHTTPRequestHandler):
    """A loopback webhook receiver that records each body."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        type(self).bodies.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    Receiver.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", Receiver.bodies
    server.shutdown()
    server.server_close()


def test_everything_it_knows_survives_a_restart(tmp_path: Path, receiver: tuple[str, list[Any]]) -> None:
    hook, _ = receiver
    with Sandbox(config(tmp_path, REAL_TIME)) as first:
        api = Api(first)
        capped = api.data("POST", path("sandbox_keys"), json={"name": "capped", "monthlyCap": 3})["key"]
        done = api.run(
            IMAGE,
            "done",
        ).json()["data"]
        assert (
            Api(first, capped).run({**IMAGE, "input": {**IMAGE["input"], "prompt": "a fox"}}).status_code
            == 201
        )
        api.data("POST", path("sandbox_faults"), json={"modelScript": ["fail"]})
        storm = {**IMAGE, "input": {"prompt": "a storm", "quality": "low"}, "webhook": hook}
        failed = api.run(storm, "failed").json()["data"]
        assert api.settled(failed["id"])["status"] == states.FAILED  # and refunded
        api.data(
            "POST",
            path("sandbox_faults"),
            json={"rates": {"429": 0.5}, "script": ["500"], "routes": ["estimate"], "seed": 7},
        )
        hooked = api.run({**IMAGE, "webhook": hook}, "hooked").json()["data"]
        analysis = api.data("POST", path("analyze"), json={"url": "https://www.tiktok.com/@a/video/1"})
        job = api.data("POST", path("job_start"), json={"topic": "owls", wire.JOB_IDEMPOTENCY: "job-1"})
        before = api.snapshot()
        assert len(before["webhooks"]) == 1
    stopped_at = first.world.clock.now()  # its clock was saved as it closed, a moment ago
    time.sleep(1.0)  # real: downtime is wall time, which a resumed clock must not count
    second = Sandbox(config(tmp_path, REAL_TIME))
    assert abs(second.world.clock.now() - stopped_at) < 0.5, "simulated time resumes where it stopped"

    with second:
        api = Api(second)
        after = api.snapshot()
        assert after == before
        # The capped key is still the user's, with its month's spending: a second charge passes its cap.
        refused = Api(second, capped).run({**IMAGE, "input": {"prompt": "a hare", "quality": "low"}})
        assert refused.status_code == 429 and refused.json() == messages.key_cap_reached(3)
        # Idempotency-Keys: the same start answers the same generation, charging nothing.
        again = api.run(IMAGE, "done")
        assert again.status_code == 200 and again.json()["data"]["id"] == done["id"]
        again_job = api.data("POST", path("job_start"), json={"topic": "x", wire.JOB_IDEMPOTENCY: "job-1"})
        assert again_job["jobId"] == job["jobId"]
        # Work in flight when the first stopped ends on the second, charged once.
        assert api.settled(hooked["id"])["status"] in (states.SUCCEEDED, states.FAILED)
        assert api.data("GET", path("analysis", id=analysis["analysisId"]))["status"] == states.READY
        assert api.data("GET", path("job", id=job["jobId"]))["status"] in (states.DONE, states.FAILED)
        charges = [e for e in api.snapshot()["ledger"] if e["kind"] == "charge"]
        assert len({(e["resourceId"], e.get("step")) for e in charges}) == len(charges), "charged once each"
        # New ids never repeat an old one: the id generator goes on from where it stood.
        fresh = api.run({**IMAGE, "input": {"prompt": "a new one", "quality": "low"}}).json()["data"]["id"]
        assert fresh not in {e["resourceId"] for e in before["ledger"]}


def test_timers_of_work_in_flight_fire_again_after_a_restart(
    tmp_path: Path, receiver: tuple[str, list[dict[str, Any]]]
) -> None:
    """A generation running when its sandbox stopped settles on time on the next, and sends its webhook,
    without anyone reading it."""
    hook, bodies = receiver
    with Sandbox(config(tmp_path, REAL_TIME)) as first:  # a minute's run: it is running when this stops
        body = {"modelId": "infinitetalk-fast", "input": {}, "webhook": hook}
        base = first.base_url
        body["input"] = {
            "image": f"{base}/_sandbox/samples/face.png",
            "audio": f"{base}/_sandbox/samples/voice.wav",
        }
        started = Api(first).run(body).json()["data"]
        assert started["status"] == states.PROCESSING
        finish_at = first.world.generations.items[started["id"]].finish_at
    assert not bodies
    with Sandbox(config(tmp_path)):  # x600: the rest of the run takes a fraction of a second
        wait_until(lambda: bodies, 30, "the webhook of the timer set again")
    assert [b["id"] for b in bodies] == [started["id"]], "the timer set again sent its webhook"
    assert bodies[0]["status"] == states.SUCCEEDED and finish_at > 0


def test_reset_forgets_all_but_uploads_and_media_and_is_another_instance(tmp_path: Path) -> None:
    with Sandbox(config(tmp_path)) as first:
        api = Api(first)
        gen = api.run(IMAGE).json()["data"]
        url = api.settled(gen["id"])["output"]["urls"][0]
        voice = httpx.get(f"{api.base_url}/_sandbox/samples/voice.wav", timeout=30).content  # real media only
        uploaded = api.data("PUT", path("sandbox_upload", name="voice.wav"), content=voice)
        before = api.snapshot()
        api.data("POST", path("sandbox_reset"))
        reset = api.snapshot()
    assert reset["instance"] != before["instance"]
    assert (
        reset["ledger"] == [] and reset["counts"]["generations"] == 0 and reset["account"]["balance"] == 3000
    )
    with Sandbox(config(tmp_path)) as second:
        api = Api(second)
        assert api.snapshot()["instance"] == reset["instance"], "the reset state is the one kept"
        assert api.request("GET", path("generation", id=gen["id"])).status_code == 404
        assert [u["name"] for u in api.data("GET", path("sandbox_uploads"))["uploads"]] == [uploaded["name"]]
        assert api.request("GET", urlsplit(url).path).status_code == 200, (
            "its rendered media are still served"
        )


def test_one_folder_serves_one_sandbox_at_a_time(tmp_path: Path) -> None:
    first = Sandbox(data_dir=tmp_path)
    assert (tmp_path / "state.sqlite").stat().st_mode & 0o077 == 0, "its keys are the user's alone"
    with pytest.raises(StateError, match="another sandbox is using"):
        Sandbox(data_dir=tmp_path)
    first.close()
    Sandbox(data_dir=tmp_path).close()


def test_a_state_it_cannot_read_is_refused_with_the_fix(tmp_path: Path) -> None:
    Sandbox(data_dir=tmp_path).close()
    with sqlite3.connect(tmp_path / "state.sqlite") as db:
        db.execute("UPDATE meta SET value='99' WHERE name='format'")
    with pytest.raises(StateError, match="mediagen sandbox reset"):
        Sandbox(data_dir=tmp_path)


def test_without_a_data_folder_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Sandbox(time_scale=SCALE) as sandbox:
        assert sandbox.world.state is None
        assert Api(sandbox).run(IMAGE).status_code == 201
    assert list(tmp_path.iterdir()) == []


def test_the_file_keeps_the_newest_webhooks_across_saves_restarts_and_resets(tmp_path: Path) -> None:
    """The outbox keeps its newest ``KEPT`` webhooks and says which rows to forget as older ones leave."""

    def saved_numbers() -> list[int]:
        with sqlite3.connect(tmp_path / "state.sqlite") as db:
            return sorted(int(n) for (n,) in db.execute("SELECT id FROM resources WHERE kind=?", (KIND,)))

    sandbox = Sandbox(data_dir=tmp_path)  # recorded only: a public host is never posted to here
    for number in range(KEPT + 3):
        sandbox.world.outbox.send("https://hooks.example.com/in", {"number": number})
        if number in (1, KEPT, KEPT + 2):  # saves in between: the rows that left are forgotten as they go
            sandbox.world.save()
    assert saved_numbers() == list(range(3, KEPT + 3))
    sandbox.world.reset()
    assert saved_numbers() == list(range(3, KEPT + 3)), "webhooks sent outlive a reset, as in memory"
    sandbox.close()
    again = Sandbox(data_dir=tmp_path)
    outbox = again.world.outbox
    assert (outbox.total, len(outbox.sent), json.loads(outbox.sent[0]["body"])) == (
        KEPT + 3,
        KEPT,
        {"number": 3},
    )
    outbox.send("https://hooks.example.com/in", {"number": KEPT + 3})
    again.close()
    assert saved_numbers() == list(range(4, KEPT + 4))
