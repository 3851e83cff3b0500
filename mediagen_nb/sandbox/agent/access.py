"""Who may use the agent (MCP) server: the account's API keys, and OAuth access tokens of agent clients.

The spec says agent clients signed in with OAuth are limited per access token, and does not show the
sign-in. This module is the whole of our choice, the obvious minimal one: OAuth 2.1's authorization
code with PKCE (S256) for public clients, nothing more (no client registration, no refresh tokens, no
scopes).

* ``GET /oauth/authorize?response_type=code&client_id=..&code_challenge=..&code_challenge_method=S256``
  is the web app's sign-in page. The sandbox has one user, signed in already; the page asks that user
  to allow the client (a button, its form posted back to the same address: ``POST /oauth/authorize``
  with the page's one-time ``consent``), and a post from another site's page is refused, so no page
  elsewhere gets a code without the user's click on the sandbox's own page (which no frame may hold).
  Then, for the demo account: with a ``redirect_uri`` (https, or http on loopback) it redirects there
  with ``code`` and ``state``; without one (or the out-of-band ``urn:ietf:wg:oauth:2.0:oob``) it shows
  the code to paste back, which is what a remote notebook kernel needs (it cannot receive a callback).
  PKCE is required: an S256 ``code_challenge`` (43 base64url characters) here, its verifier (43 to 128
  unreserved characters) at the token endpoint.
* ``POST /oauth/token`` (form or JSON: ``grant_type=authorization_code``, ``code``, ``code_verifier``,
  ``client_id``) answers ``{access_token, token_type: "Bearer", expires_in}``. A code works once, for
  ten minutes; a token for 30 days of simulated time.
* ``/.well-known/oauth-authorization-server`` and ``/.well-known/oauth-protected-resource/mcp`` tell
  clients where these are (RFC 8414, RFC 9728), and a 401 of ``/mcp`` points at the second.

A sandbox started with ``agent_keys=False`` (``--agent-tokens-only``) refuses API keys at ``/mcp``, as
a service whose agent server wants OAuth would.
"""

import base64
import hashlib
import html
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from mediagen_nb.protocol import messages
from mediagen_nb.protocol.paths import PATHS
from mediagen_nb.runtime.clock import SimulatedClock
from mediagen_nb.sandbox.accounts import DEMO_ACCOUNT, VIA_AGENT, Caller, bearer
from mediagen_nb.sandbox.hardening import CONSENT_POLICY
from mediagen_nb.sandbox.responses import ServiceError
from mediagen_nb.sandbox.saved import Row, Rows

if TYPE_CHECKING:
    from mediagen_nb.sandbox.world import World

OUT_OF_BAND = "urn:ietf:wg:oauth:2.0:oob"  # "show me the code": the notebook sign-in
CODE_SECONDS = 600.0
# The consent page and the code wait on a person (a click, a code pasted back), so they expire in the
# machine's seconds: on the sandbox's scaled clock ten minutes are one second at x600.
_person_now = time.monotonic
TOKEN_SECONDS = 30 * 86400.0
TOKEN_PREFIX = "mgat_"
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")  # BASE64URL(SHA-256(verifier)), unpadded (RFC 7636)
VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")
TOKEN = "token"  # an access token's rows in the saved state
MAX_ASKED = 1000  # sign-ins waiting for the user's click; the oldest are dropped past it


@dataclass
class AccessToken:
    """An access token the sandbox issued to an agent client, for one account."""

    id: str
    secret: str
    account: str
    client_id: str
    expires_at: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "secret": self.secret,
            "account": self.account,
            "clientId": self.client_id,
            "expiresAt": self.expires_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AccessToken":
        return cls(data["id"], data["secret"], data["account"], data["clientId"], data["expiresAt"])


@dataclass(frozen=True)
class Asked:
    """A sign-in waiting for the user's consent on the sign-in page."""

    client_id: str
    challenge: str
    redirect_uri: str | None
    state: str | None
    expires_at: float


@dataclass(frozen=True)
class Grant:
    """An authorization code waiting for its exchange."""

    account: str
    client_id: str
    challenge: str
    redirect_uri: str | None
    expires_at: float


class OAuthError(Exception):
    """A refusal of the sign-in, in OAuth's shape (``error``, ``error_description``)."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error, self.description = error, description

    def response(self) -> JSONResponse:
        return JSONResponse({"error": self.error, "error_description": self.description}, status_code=400)


class Access:
    """The access tokens and pending codes of one sandbox state."""

    def __init__(self, clock: SimulatedClock) -> None:
        self.clock = clock
        self.tokens: dict[str, AccessToken] = {}  # by secret
        self._grants: dict[str, Grant] = {}  # by code; never saved (ten minutes)
        self._asked: dict[str, Asked] = {}  # by the consent form's one-time value; never saved
        self.unsaved: set[str] = set()  # secrets of tokens issued since the state was saved

    def dump(self) -> Iterator[Row]:
        """The access tokens issued since the last dump, as saved rows."""
        issued = list(self.unsaved)
        self.unsaved.clear()
        yield from ((TOKEN, self.tokens[s].id, self.tokens[s].to_dict()) for s in issued if s in self.tokens)

    def load(self, rows: Rows) -> None:
        """Take back the saved access tokens (:meth:`dump`)."""
        self.tokens = {t.secret: t for t in map(AccessToken.from_dict, rows.get(TOKEN, {}).values())}

    def ask(self, params: dict[str, str]) -> tuple[str, Asked]:
        """A sign-in checked as OAuth says, waiting for the user's consent: the consent form's one-time
        value (a page of another site cannot read it) and what is asked."""
        if params.get("response_type") != "code":
            raise OAuthError("unsupported_response_type", "response_type must be code")
        client_id = params.get("client_id", "")
        if not client_id:
            raise OAuthError("invalid_request", "client_id is required")
        challenge = params.get("code_challenge", "")
        if params.get("code_challenge_method") != "S256" or not CHALLENGE.fullmatch(challenge):
            raise OAuthError(
                "invalid_request",
                "PKCE is required: code_challenge (the unpadded base64url SHA-256 of a code_verifier, "
                "43 characters) with code_challenge_method=S256",
            )
        redirect = params.get("redirect_uri") or None
        if redirect == OUT_OF_BAND:
            redirect = None
        if redirect is not None and not _redirect_allowed(redirect):
            raise OAuthError("invalid_request", "redirect_uri must be https, or http on this machine")
        consent = secrets.token_urlsafe(24)
        asked = Asked(
            client_id, challenge, redirect, params.get("state") or None, _person_now() + CODE_SECONDS
        )
        while len(self._asked) >= MAX_ASKED:
            del self._asked[next(iter(self._asked))]
        self._asked[consent] = asked
        return consent, asked

    def approve(self, consent: str, account: str = DEMO_ACCOUNT) -> tuple[str, Grant, str | None]:
        """The user allowed the sign-in of ``consent`` for the signed-in ``account`` (the sandbox's one
        user): a code for it, the grant and the client's ``state``. A consent works once."""
        asked = self._asked.pop(consent, None)
        if asked is None or asked.expires_at <= _person_now():
            raise OAuthError(
                "invalid_request", "this sign-in page is used or expired: start the sign-in again"
            )
        code = secrets.token_urlsafe(24)
        grant = Grant(
            account, asked.client_id, asked.challenge, asked.redirect_uri, _person_now() + CODE_SECONDS
        )
        self._grants[code] = grant
        return code, grant, asked.state

    def exchange(self, form: dict[str, str]) -> AccessToken:
        """An access token for a code and its PKCE verifier; a code works once."""
        if form.get("grant_type") != "authorization_code":
            raise OAuthError("unsupported_grant_type", "grant_type must be authorization_code")
        grant = self._grants.pop(form.get("code", ""), None)
        if grant is None or grant.expires_at <= _person_now():
            raise OAuthError("invalid_grant", "the code is unknown, used or expired: sign in again")
        if form.get("client_id") != grant.client_id:
            raise OAuthError("invalid_grant", "client_id is not the one the code was given to")
        if (form.get("redirect_uri") or OUT_OF_BAND) != (grant.redirect_uri or OUT_OF_BAND):
            raise OAuthError("invalid_grant", "redirect_uri is not the one the code was given for")
        verifier = form.get("code_verifier", "")
        if not VERIFIER.fullmatch(verifier):
            raise OAuthError("invalid_grant", "code_verifier must be 43 to 128 unreserved characters (PKCE)")
        digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if not verifier or not secrets.compare_digest(digest, grant.challenge):
            raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge")
        return self.issue(grant.account, grant.client_id)

    def issue(self, account: str, client_id: str) -> AccessToken:
        token = AccessToken(
            id=f"tok_{secrets.token_hex(6)}",
            secret=TOKEN_PREFIX + secrets.token_urlsafe(32),
            account=account,
            client_id=client_id,
            expires_at=self.clock.now() + TOKEN_SECONDS,
        )
        self.tokens[token.secret] = token
        self.unsaved.add(token.secret)
        return token


def _redirect_allowed(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK)


def authenticate(world: "World", authorization: str | None) -> Caller:
    """The caller of an agent request: an active API key (unless the sandbox takes tokens only), or an
    unexpired access token; the spec's 401 and 403 otherwise."""
    credential = bearer(authorization)
    if credential.startswith("pk_live_"):
        if not world.config.agent_keys:
            raise ServiceError(401, messages.AGENT_NEEDS_SIGN_IN)
        return world.accounts.authenticate(authorization, VIA_AGENT)
    token = world.access.tokens.get(credential)
    if token is None or token.expires_at <= world.clock.now():
        raise ServiceError(401, messages.INVALID_TOKEN)
    return Caller(world.accounts.active(token.account), None, token.id, VIA_AGENT)


def challenge(base_url: str) -> str:
    """The ``WWW-Authenticate`` of a 401 at ``/mcp``: where a client learns how to sign in."""
    return f'Bearer resource_metadata="{base_url}{PATHS["oauth_resource"]}"'


def _world(request: Request) -> "World":
    world: World = request.app.state.world
    return world


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


async def server_metadata(request: Request) -> Response:
    """GET /.well-known/oauth-authorization-server: the sign-in's endpoints (RFC 8414)."""
    base = _base(request)
    return JSONResponse(
        {
            "issuer": base,
            "authorization_endpoint": base + PATHS["oauth_authorize"],
            "token_endpoint": base + PATHS["oauth_token"],
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
        }
    )


async def resource_metadata(request: Request) -> Response:
    """GET /.well-known/oauth-protected-resource/mcp: the agent server and who signs its clients in."""
    base = _base(request)
    return JSONResponse(
        {
            "resource": base + PATHS["mcp"],
            "authorization_servers": [base],
            "bearer_methods_supported": ["header"],
        }
    )


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(f"<!doctype html><title>{html.escape(title)}</title>{body}", status)


async def authorize(request: Request) -> Response:
    """GET /oauth/authorize: the web app's sign-in page, asking the user to allow the client; POST (its
    form, from this page only): the user allowed it, so a code for the sandbox's demo account."""
    from mediagen_nb.sandbox.pipeline import FROM_ANOTHER_SITE, capped_body, from_another_site

    access = _world(request).access
    try:
        if request.method == "GET":
            consent, asked = access.ask(dict(request.query_params))
            return _consent_page(consent, asked)
        if from_another_site(request):
            return _page("Sign-in refused", f"<p>{html.escape(FROM_ANOTHER_SITE)}</p>", 403)
        form = dict(parse_qsl((await capped_body(request)).decode("utf-8", "replace")))
        code, grant, state = access.approve(form.get("consent", ""))
    except OAuthError as exc:
        return _page("Sign-in refused", f"<p>{html.escape(exc.description)}</p>", 400)
    if grant.redirect_uri is not None:
        answer = {"code": code, **({"state": state} if state else {})}
        separator = "&" if urlsplit(grant.redirect_uri).query else "?"
        return RedirectResponse(grant.redirect_uri + separator + urlencode(answer), status_code=303)
    return _page(
        "mediagen sandbox sign-in",
        "<h1>Signed in to the sandbox's demo account</h1>"
        f"<p>Paste this code back where you started the sign-in:</p><pre id=code>{html.escape(code)}</pre>"
        "<p>It works once, for ten minutes.</p>",
    )


def _consent_page(consent: str, asked: Asked) -> Response:
    """The page that asks the user: a form posted back here (no script; no other site may frame it)."""
    where = (
        f"then sends you back to <code>{html.escape(asked.redirect_uri)}</code>"
        if asked.redirect_uri is not None
        else "then shows a code to paste back where you started"
    )
    page = _page(
        "Allow access to the sandbox?",
        "<h1>Allow access to the sandbox's demo account?</h1>"
        f"<p><b>{html.escape(asked.client_id)}</b> asks to use the sandbox's demo account through its "
        f"agent server: it could start work that spends the account's credits. Allowing it {where}.</p>"
        f'<form method=post action="{PATHS["oauth_authorize"]}">'
        f'<input type=hidden name=consent value="{html.escape(consent)}">'
        "<button type=submit id=allow>Allow</button></form>"
        "<p>If you did not start this sign-in, close this page.</p>",
    )
    page.headers["Content-Security-Policy"] = CONSENT_POLICY
    page.headers["X-Frame-Options"] = "DENY"
    page.headers["Cache-Control"] = "no-store"
    return page


async def token(request: Request) -> Response:
    """POST /oauth/token: an access token for a code and its PKCE verifier."""
    from mediagen_nb.sandbox.pipeline import capped_body, json_object

    if request.headers.get("content-type", "").startswith("application/json"):
        form = {k: str(v) for k, v in (await json_object(request)).items()}
    else:  # application/x-www-form-urlencoded, as OAuth sends it
        form = dict(parse_qsl((await capped_body(request)).decode("utf-8", "replace")))
    try:
        issued = _world(request).access.exchange(form)
    except OAuthError as exc:
        return exc.response()
    seconds = round(issued.expires_at - _world(request).clock.now())
    return JSONResponse(
        {"access_token": issued.secret, "token_type": "Bearer", "expires_in": seconds},
        headers={"Cache-Control": "no-store"},
    )
