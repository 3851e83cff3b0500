"""Whom a sandbox answers: requests that name it in ``Host``, and, for a sandbox with an owner, its owner.

* **Host.** A web page that reaches the sandbox by DNS rebinding (a name of its own that first resolves
  to its server, then to 127.0.0.1) talks to it "same-origin", with its own name in ``Host`` and
  ``Origin``, so the cross-site checks cannot see it. Every request must name the sandbox, as Jupyter
  checks: ``127.0.0.1``, ``localhost`` or ``[::1]`` at the port it serves, or a name its user allowed
  (``--allow-host``, ``MEDIAGEN_SANDBOX_HOSTS``: a proxy's name, ``name`` for any port, ``*`` for any
  name where no browser can reach the port, as in a Binder container). A media read passed on by
  jupyter-server-proxy names the Jupyter server, which on this machine is a loopback name at its own
  port: allowed too (a browser's request to the sandbox names the sandbox's own port; only a proxy
  names another). The in-process transport (:meth:`Sandbox.transport`) has no Host to check.
* **Owner.** A sandbox with a secret (the user's kept sandbox: ``protocol/ownership.py``) refuses
  every request without its owner's session token (``X-Mediagen-Sandbox``), before any route runs, but
  the reads of media (their URLs are unguessable: ``uploads.py``, ``media/store.py``), of the sample
  inputs and web-app stand-in pages (public text), and the hello a client proves it by. ``/mcp`` also
  takes the owner's agent token, which ``mediagen mcp-config`` writes for agent clients.
"""

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mediagen_nb.protocol import ownership
from mediagen_nb.protocol.paths import PATHS
from mediagen_nb.sandbox.hardening import PROXY_HEADERS, PROXY_READABLE
from mediagen_nb.sandbox.responses import error_response

IN_PROCESS = "mediagen_nb.in_process"  # the scope key of requests through Sandbox.transport()
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
ANY = "*"
DEFAULT_PORT = 80
OWNER_ONLY = (
    "This sandbox answers only the user who started it: the request carries no token of its owner "
    f"({ownership.HEADER}). The mediagen_nb client adds it from the secret in the sandbox's folder; "
    "reading a medium by its URL needs none"
)


@dataclass(frozen=True)
class Owner:
    """What a sandbox that answers its owner alone holds: the secret, the folder it serves (what its proof
    names) and this process's boot id; the tokens are made from them."""

    secret: bytes = field(repr=False)
    folder: str
    boot: str = field(default_factory=ownership.new_boot)

    @functools.cached_property
    def session(self) -> str:
        return ownership.session_token(self.secret, self.boot)

    @functools.cached_property
    def agent(self) -> str:
        return ownership.agent_token(self.secret)

    @functools.cached_property
    def demo_key(self) -> str:
        return ownership.demo_key(self.secret)

    @functools.cached_property
    def names_key(self) -> bytes:
        return ownership.names_key(self.secret)


def foreign_host(host: str, served: str) -> str:
    return (
        f"Host {host[:100]!r} is not a name of this sandbox ({served}): refused, as a web page that "
        "reached it by DNS rebinding would be. To reach it under another name (a proxy), start it with "
        "--allow-host NAME (or MEDIAGEN_SANDBOX_HOSTS=NAME)"
    )


def _split(host: str) -> tuple[str, int | None]:
    """A Host header's name (lowercase; IPv6 in brackets) and port (None when absent or not a number)."""
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host.partition("]")
        name, port = name + "]", rest.removeprefix(":") if rest.startswith(":") else ""
        if rest and not rest.startswith(":"):
            return host, None
    else:
        name, _, port = host.partition(":")
    if not port:
        return name, DEFAULT_PORT
    return name, int(port) if port.isdigit() and len(port) <= 5 else None


class Hosts:
    """The names a sandbox answers to: its loopback names at the port it serves, and those allowed."""

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        self.allowed = tuple(name.strip().lower() for name in allowed if name.strip())
        self.port: int | None = None  # the port it serves (None: not served yet)
        self._names: tuple[str, ...] = ()

    @staticmethod
    def parse(text: str | None) -> tuple[str, ...]:
        """Names from ``MEDIAGEN_SANDBOX_HOSTS`` (commas or spaces between them)."""
        return tuple(part for part in (text or "").replace(",", " ").split() if part)

    def serve(self, host: str, port: int) -> None:
        """Served on ``host:port``: its loopback names at that port (and ``host``, when it is another)."""
        self.port = port
        own = [f"{name}:{port}" for name in LOOPBACK]
        if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::", ""):
            own.append(f"{host.lower()}:{port}")
        self._names = tuple(own)

    def served(self) -> str:
        return ", ".join(self._names + self.allowed) or "its loopback names"

    def allows(self, host: str | None, *, proxied: bool = False) -> bool:
        """Whether a request whose Host is ``host`` names this sandbox (``proxied``: a media read that
        jupyter-server-proxy passed on, which names the Jupyter server)."""
        if ANY in self.allowed:
            return True
        if not host:
            return False
        name, port = _split(host)
        if port is None:
            return False
        if f"{name}:{port}" in self._names or name in self.allowed or f"{name}:{port}" in self.allowed:
            return True
        return name in LOOPBACK and (proxied or self.port is None)

    def mcp_settings(self) -> tuple[bool, list[str], list[str]]:
        """For the MCP SDK's rebinding protection: whether it is on, the hosts and the origins allowed."""
        if ANY in self.allowed:
            return False, [], []
        hosts = list(self._names) or [f"{name}:*" for name in LOOPBACK]
        for name in self.allowed:
            hosts += [name] if ":" in name.lstrip("[").rpartition("]")[2] else [name, f"{name}:*"]
        return True, hosts, [f"http://{host}" for host in hosts] + [f"https://{host}" for host in hosts]


def open_read(scope: Scope) -> bool:
    """A read that needs no owner's token: a medium, a sample, an upload, a stand-in page, the hello."""
    if scope.get("method") not in ("GET", "HEAD"):
        return False
    where = str(scope.get("path", ""))
    return where.startswith(PROXY_READABLE) or where == PATHS["sandbox_hello"]


class Guard:
    """ASGI middleware: the Host check on every request, then the owner's token where the sandbox has one."""

    def __init__(self, app: ASGIApp, hosts: Hosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal: Response | None = None
        if not scope.get(IN_PROCESS):
            proxied = bool(PROXY_HEADERS & {name.lower() for name, _ in scope.get("headers", [])})
            host = headers.get("host")
            if not self.hosts.allows(host, proxied=proxied and open_read(scope)):
                refusal = error_response(403, foreign_host(host or "", self.hosts.served()))
        world = scope["app"].state.world if "app" in scope else None
        if refusal is None and world is not None and world.owner is not None and not open_read(scope):
            given = headers.get(ownership.HEADER)
            at_mcp = scope.get("path") == PATHS["mcp"]
            if not (
                ownership.same(given, world.owner.session)
                or (at_mcp and ownership.same(given, world.owner.agent))
            ):
                refusal = error_response(403, OWNER_ONLY)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def hello(request: Request) -> Response:
    """GET /_sandbox/hello?challenge=<64 hex digits>: the owner's sandbox proves it holds the secret
    (``ownership.proof``, bound to the port this request came in on and the folder it serves) and says
    its boot id. A sandbox without an owner has nothing to prove (404)."""
    from mediagen_nb.sandbox.responses import ok

    world = request.app.state.world
    challenge = request.query_params.get("challenge", "")
    if world.owner is None:
        return error_response(404, "This sandbox has no owner to prove: it answers anyone on this machine")
    if not ownership.CHALLENGE.fullmatch(challenge):
        return error_response(400, "challenge must be 64 lowercase hex digits")
    server = request.scope.get("server") or ("", 0)
    port = int(server[1] or 0)
    answer = ownership.proof(world.owner.secret, challenge, port, world.owner.folder, world.owner.boot)
    return ok({"boot": world.owner.boot, "proof": answer})
