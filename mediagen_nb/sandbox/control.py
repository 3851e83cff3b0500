"""Sandbox-only endpoints under ``/_sandbox/``: keys, account, ledger, faults, reset, info, media, uploads.

None of these exist on the real service; they let tests and notebooks set up a situation
(a suspended account, a capped key, a 503 storm) and check what was charged.
"""

import html
import math
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response

from mediagen_nb.protocol import messages
from mediagen_nb.protocol.paths import path
from mediagen_nb.runtime.clock import MAX_SKIP_SECONDS
from mediagen_nb.sandbox import uploads as upload_rules
from mediagen_nb.sandbox.accounts import DEMO_ACCOUNT, MAX_CREDITS, VIA_APP, Caller
from mediagen_nb.sandbox.lifecycle import top_up_url
from mediagen_nb.sandbox.pipeline import declared_length, json_object
from mediagen_nb.sandbox.responses import bad_request, error_response, ok
from mediagen_nb.sandbox.world import World

Endpoint = Callable[[Request], Awaitable[Response]]
APP_RUN = "app"  # the ledger's name for a run of the web app


def _world(request: Request) -> World:
    world: World = request.app.state.world
    return world


async def info(request: Request) -> Response:
    """GET /_sandbox/info: time scale, seed, counts and the fault plan."""
    return ok(_world(request).info())


async def create_key(request: Request) -> Response:
    """POST /_sandbox/keys: a new key (optional name, monthlyCap, state, expires, account)."""
    world = _world(request)
    key = world.accounts.create_key(await json_object(request))
    return ok(key.public(world.clock, reveal=True), 201)


async def account(request: Request) -> Response:
    """GET or POST /_sandbox/account: read, or set balance, plan and suspended."""
    world = _world(request)
    if request.method == "GET":
        return ok(world.accounts.account(request.query_params.get("account", "demo")).public())
    return ok(world.accounts.update_account(await json_object(request)).public())


async def ledger(request: Request) -> Response:
    """GET /_sandbox/ledger: every charge, refund and monthly grant, optionally of one account or id."""
    entries = _world(request).accounts.entries()
    for param, name in (("account", "account"), ("resourceId", "resourceId")):
        wanted = request.query_params.get(param)
        if wanted:
            entries = [e for e in entries if e[name] == wanted]
    return ok({"entries": entries})


async def app_runs(request: Request) -> Response:
    """POST /_sandbox/app-runs: record a run started in the web app (``credits``, ``failed``, ``modelId``,
    ``account``): charged to the shared balance like any run, refunded at once when it failed, and
    counted by ``check_usage``'s ``monthRuns`` but not its ``monthApiRuns``."""
    world = _world(request)
    body = await json_object(request)
    credits, failed, model_id = body.get("credits"), body.get("failed", False), body.get("modelId")
    if isinstance(credits, bool) or not isinstance(credits, int) or not 0 <= credits <= MAX_CREDITS:
        raise bad_request(f"credits must be a whole number of credits from 0 to {MAX_CREDITS}")
    if not isinstance(failed, bool):
        raise bad_request("failed must be true or false")
    if model_id is not None and not isinstance(model_id, str):
        raise bad_request("modelId must be a string")
    account_id = body.get("account", DEMO_ACCOUNT)
    if not isinstance(account_id, str) or not account_id:
        raise bad_request("account must be a non-empty string")
    caller = Caller(world.accounts.account(account_id), None, via=VIA_APP)
    if caller.account.balance < credits:
        base = str(request.base_url).rstrip("/")
        raise bad_request(messages.not_enough_credits(credits, caller.account.balance, top_up_url(base)))
    run_id = world.new_id()
    extra = {"modelId": model_id} if model_id else {}
    world.accounts.charge(caller, credits, APP_RUN, run_id, **extra)
    if failed:
        world.accounts.refund(caller, credits, APP_RUN, run_id, **extra, note="failed")
    status = "failed" if failed else "succeeded"
    return ok({"id": run_id, "account": account_id, "credits": credits, "status": status}, 201)


async def faults(request: Request) -> Response:
    """GET or POST /_sandbox/faults: read or replace the fault plan."""
    world = _world(request)
    if request.method == "GET":
        return ok(world.faults.describe())
    return ok(world.faults.configure(await json_object(request)))


async def reset(request: Request) -> Response:
    """POST /_sandbox/reset: back to a fresh demo account, no resources, no faults."""
    world = _world(request)
    world.reset()
    return ok(world.info())


async def clock(request: Request) -> Response:
    """POST /_sandbox/clock: ``{"advance": seconds}`` moves simulated time forward; the timers it passes
    (runs ending, long polls timing out) fire, in time order, before it answers."""
    world = _world(request)
    advance = (await json_object(request)).get("advance", 0)
    if isinstance(advance, bool) or not isinstance(advance, (int, float)) or advance < 0:
        raise bad_request("advance must be a number of simulated seconds, 0 or more")
    try:
        world.clock.advance(float(advance) if advance <= MAX_SKIP_SECONDS else math.inf)
    except ValueError as exc:
        raise bad_request(f"advance: {exc}") from None
    return ok({"now": world.clock.iso()})


async def webhooks(request: Request) -> Response:
    """GET /_sandbox/webhooks: every webhook sent, with headers, body and delivery result."""
    return ok({"webhooks": list(_world(request).outbox.sent)})


# Media never change under a name. No CORS header: pages show them in <img>, <audio> and <video>,
# which need none, and no page of another site may read their bytes (hardening.py adds nosniff and
# a Content-Security-Policy that forbids script to every answer).
MEDIA_HEADERS = {"Cache-Control": "public, max-age=31536000, immutable"}


async def _file(request: Request) -> Response:
    found = await _world(request).media.read(request.path_params["name"])
    if found is None:
        return error_response(404, messages.FILE_NOT_FOUND)
    data, content_type = found
    return Response(data, media_type=content_type, headers=MEDIA_HEADERS)


async def media(request: Request) -> Response:
    """GET /_sandbox/media/{name}: an output file, rendered on first read."""
    return await _file(request)


async def samples(request: Request) -> Response:
    """GET /_sandbox/samples/{name}: sample inputs (face.png, voice.wav, clip.mp4, ...)."""
    return await _file(request)


def _upload_url(request: Request, name: str) -> str:
    return str(request.base_url).rstrip("/") + path("sandbox_upload", name=name)


async def put_upload(request: Request) -> Response:
    """PUT /_sandbox/uploads/{name} (with the account's key): store the body if it is a medium the
    inputs take (an SVG as PNG); 201 when new, 200 when the bytes were there."""
    name, declared = request.path_params["name"], declared_length(request)
    upload, created = await _world(request).uploads.put(name, request.stream(), declared)
    data = {"url": _upload_url(request, upload.name), "name": upload.name, "bytes": upload.bytes}
    return ok({**data, "sha256": upload.sha256}, 201 if created else 200)


async def get_upload(request: Request) -> Response:
    """GET /_sandbox/uploads/{name}: an uploaded file, as the media type its content was found to be."""
    name = request.path_params["name"]
    found = _world(request).uploads.path(name)
    if found is None:
        return error_response(404, messages.FILE_NOT_FOUND)
    return FileResponse(found, media_type=upload_rules.content_type(name), headers=MEDIA_HEADERS)


async def list_uploads(request: Request) -> Response:
    """GET /_sandbox/uploads (with the account's key): every stored upload with its URL and size, and
    the store's caps; ``?sha256=`` lists only the file of that content (with its ``sha256``), so a client
    asks whether a file is there without knowing how the sandbox names it."""
    store = _world(request).uploads
    wanted = request.query_params.get("sha256")
    if wanted is not None:
        found = store.by_digest(wanted.lower())
        uploads = [found] if found is not None else []
    else:
        uploads = store.stored()
    files = [
        {"url": _upload_url(request, u.name), "name": u.name, "bytes": u.bytes}
        | ({"sha256": u.sha256} if u.sha256 else {})
        for u in uploads
    ]
    return ok(
        {
            "uploads": files,
            "totalBytes": sum(f["bytes"] for f in files),
            "maxTotalBytes": store.max_total_bytes,
            "receivingBytes": store.receiving_bytes,
            "maxFileBytes": upload_rules.MAX_FILE_BYTES,
        }
    )


async def app_page(request: Request) -> Response:
    """GET /_sandbox/app/{page}: stand-ins for the web app's billing and share pages."""
    page = html.escape(request.path_params["page"])
    return HTMLResponse(
        f"<!doctype html><title>mediagen sandbox</title><h1>Sandbox web app: {page}</h1>"
        "<p>The sandbox has no web app. Top up with <code>POST /_sandbox/account</code>.</p>"
    )
