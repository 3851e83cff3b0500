"""Peak memory of ``mediagen sandbox sync`` over a catalog of 300 models whose answers are 1.5 MB each.

Each figure is the peak resident size of a fresh process that syncs the catalog over loopback HTTP from
a service in another process (which builds each model's answer when it is asked for):

* ``sync``: ``mediagen_nb.sandbox.sync.sync``, which keeps each model's answer as it arrives;
* ``held`` (the baseline): the same answers read and every one held at once before anything is written,
  as sync did before (it measured 902 MB here);
* ``floor``: ``sync`` of a catalog of one such model (the process and one answer).

Target: ``sync`` peaks under 200 MB. The ratio printed is ``sync`` over ``held``.

    .venv/bin/python benchmarks/sync_memory.py [--models 300] [--mb 1.5]
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

TARGET_MB = 200


class Catalog:
    """A catalog of ``count`` models whose answers are about ``size`` bytes: an input schema with a long
    enum of voices (many small strings, the costliest shape for Python to hold) and a long description."""

    def __init__(self, count: int, size: int) -> None:
        from mediagen_nb.protocol.paths import path
        from mediagen_nb.sandbox.catalog import BY_ID, record

        self.path = path
        model = record(BY_ID["qwen3-tts-flash"], "https://service.example")
        self.listed = [{**model, "id": f"voice-{n:03d}"} for n in range(count)]
        schema = model["input_schema"]
        # '"Voice 00000", ' in the answer: about half; the default stays one of them, or the snapshot's
        # checks refuse the model (a default outside its options)
        voices = [schema["properties"]["voice"]["default"]] + [f"Voice {n:05d}" for n in range(size // 28)]
        props = {**schema["properties"], "voice": {**schema["properties"]["voice"], "enum": voices}}
        detail = {**model, "id": "@ID@", "description": "x", "input_schema": {**schema, "properties": props}}
        body = json.dumps({"success": True, "data": detail})
        self.template = body.replace('"x"', json.dumps("d" * max(0, size - len(body))), 1).encode()

    def answer(self, url_path: str) -> bytes:
        if url_path == self.path("models"):
            return json.dumps({"success": True, "data": {"models": self.listed}}).encode()
        if url_path.startswith(self.path("models") + "/"):
            return self.template.replace(b"@ID@", url_path.rsplit("/", 1)[1].encode(), 1)
        if url_path == self.path("openapi"):
            return b'{"openapi": "3.1.0", "info": {"title": "catalog"}}'
        return "\n".join(m["id"] for m in self.listed).encode()


def serve(count: int, size: int) -> None:
    """The service, on a free loopback port (printed), in a process of its own: its memory is not the
    sync's."""
    catalog = Catalog(count, size)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = catalog.answer(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def peak_mb() -> float:
    """This process's peak resident size so far, in MB (``ru_maxrss`` is kB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


def held(base_url: str, out: Path) -> None:
    """The baseline: every answer read and held before any is written (sync before issue 33)."""
    from mediagen_nb.protocol.paths import path
    from mediagen_nb.sandbox.catalog import snapshot

    with httpx.Client(base_url=base_url) as http:
        listed = http.get(path("models")).json()["data"]
        details: dict[str, Any] = {
            m["id"]: http.get(path("model", id=m["id"])).json()["data"] for m in listed["models"]
        }
    (out / "models").mkdir(parents=True)
    for model_id, detail in details.items():
        (out / "models" / f"{model_id}.json").write_text(json.dumps(detail, indent=1))
    (out / "models.json").write_text(json.dumps(listed))
    (out / "snapshot.json").write_text(json.dumps({"source": base_url, "date": "2026-10-01"}))
    served = snapshot.read(out)  # and it read the snapshot back while still holding every answer
    assert len(served.models) == len(details)


def child(mode: str, base_url: str, count: int) -> None:
    """One measurement, in a fresh process: its peak resident size printed last."""
    from mediagen_nb.sandbox.sync import sync

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "snapshot"
        if mode == "held":
            held(base_url, out)
        else:
            synced = sync(base_url, out)
            assert len(synced.served) == count, synced.flagged
    print(f"{peak_mb():.1f}")


def measure(mode: str, count: int, size: int) -> float:
    """The peak of ``mode`` syncing ``count`` models of ``size`` bytes served by another process."""
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--models", str(count), "--bytes", str(size)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = f"http://127.0.0.1:{server.stdout.readline().strip()}"
        done = subprocess.run(
            [sys.executable, __file__, "--child", mode, base_url, "--models", str(count)],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        server.terminate()
        server.wait(10)
    if done.returncode != 0:
        raise SystemExit(f"{mode}: {done.stderr}")
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=300)
    parser.add_argument("--mb", type=float, default=1.5)
    parser.add_argument("--bytes", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    size = args.bytes or int(args.mb * 2**20)
    if args.serve:
        serve(args.models, size)
        return
    if args.child:
        child(args.child[0], args.child[1], args.models)
        return
    floor = measure("sync", 1, size)
    synced = measure("sync", args.models, size)
    baseline = measure("held", args.models, size)
    print(f"{args.models} models of {size / 2**20:.1f} MB each; peak resident size of the syncing process:")
    print(f"  sync, each answer kept as it arrives   {synced:7.1f} MB")
    print(f"  every answer held at once (baseline)   {baseline:7.1f} MB")
    print(f"  sync of one model (the floor)          {floor:7.1f} MB")
    print(f"ratio sync / baseline: {synced / baseline:.2f}")
    verdict = "met" if synced < TARGET_MB else "MISSED"
    print(f"target (sync under {TARGET_MB} MB): {verdict}")


if __name__ == "__main__":
    main()
