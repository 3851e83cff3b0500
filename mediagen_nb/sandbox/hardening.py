"""What every answer of the sandbox carries, what reaches it through a proxy, and quiet disconnects.

Nothing the sandbox serves is a live document: every response says ``nosniff`` and carries a
Content-Security-Policy that allows no script, style, frame or plugin and sandboxes the page, so a
file opened in a browser (an upload, a JSON answer, a stand-in web-app page) can never run code on
the sandbox's address, nor on a Jupyter server's address when the browser comes through
jupyter-server-proxy. Through such a proxy (it adds ``X-Forwarded-Context``) only reads of media and of
the web app's stand-in pages (a run's share link: static text, no script) are served: previews and
their links need nothing else. A client that goes away mid-request ends it quietly, with nothing logged.
"""

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mediagen_nb.protocol.paths import PATHS
from mediagen_nb.sandbox.responses import error_response

CONTENT_SECURITY_POLICY = "default-src 'none'; sandbox"
# The one page that holds a form (the sign-in's consent, agent/access.py): still no script, style or
# frame, no other site may frame it, and not sandboxed, so its form posts back from the page's own
# origin (a sandboxed page's origin is opaque, and its post would look like another site's).
CONSENT_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
]
_SECURITY_NAMES = frozenset(name for name, _ in SECURITY_HEADERS)
# What jupyter-server-proxy adds to every request it passes on (the path it serves the sandbox under).
PROXY_HEADERS = frozenset({b"x-forwarded-context", b"x-proxycontextpath"})
PROXY_READABLE = tuple(
    PATHS[name].split("{", 1)[0]
    for name in ("sandbox_media", "sandbox_samples", "sandbox_upload", "sandbox_app")
)
ONLY_MEDIA_THROUGH_A_PROXY = (
    "Through a proxy the sandbox serves only its media (/_sandbox/media/, /_sandbox/samples/, "
    "/_sandbox/uploads/<name>) and its web-app stand-ins (/_sandbox/app/); call the API and the "
    "controls at the sandbox's own address"
)


def _media_read(scope: Scope) -> bool:
    """A GET (or HEAD) of one media file or stand-in page: the only requests a proxy may pass on."""
    return scope.get("method") in ("GET", "HEAD") and str(scope.get("path", "")).startswith(PROXY_READABLE)


class Hardened:
    """ASGI middleware around the whole sandbox: the security headers, the proxy rule, quiet disconnects."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_hardened(message: Message) -> None:
            if message["type"] == "http.response.start":
                given = message.get("headers", [])
                ours = SECURITY_HEADERS
                if (b"content-security-policy", CONSENT_POLICY.encode()) in given:
                    ours = [(SECURITY_HEADERS[0]), (b"content-security-policy", CONSENT_POLICY.encode())]
                kept = [(k, v) for k, v in given if k.lower() not in _SECURITY_NAMES]
                message = {**message, "headers": kept + ours}
            await send(message)

        if PROXY_HEADERS & {name.lower() for name, _ in scope.get("headers", [])} and not _media_read(scope):
            await error_response(403, ONLY_MEDIA_THROUGH_A_PROXY)(scope, receive, send_hardened)
            return
        try:
            await self.app(scope, receive, send_hardened)
        except ClientDisconnect:
            return  # the client went away mid-body: nobody is left to answer, and nothing went wrong here
