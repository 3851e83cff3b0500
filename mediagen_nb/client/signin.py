"""Signing in to the agent server with OAuth, where it takes no API key: a link, then the code pasted back.

A notebook's kernel may run far from its browser (JupyterHub, Colab, Binder), where no loopback callback
can reach it, so the sign-in is the out-of-band one: the toolkit shows the sign-in page's link, the user
approves there and pastes the code it shows back, and the code with its PKCE verifier becomes an access
token. Where to sign in is read from the agent server's own metadata (RFC 9728, then RFC 8414), and each
address is checked (https, or http on this machine) before anything is sent to it. The token is kept in
this process only (the assembler keeps it), in a :class:`~mediagen_nb.client.config.Secret`.
"""

import base64
import hashlib
import secrets
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx

from mediagen_nb.client import errors
from mediagen_nb.client.assemble import agent_server, signed_in
from mediagen_nb.client.config import Secret, on_this_machine
from mediagen_nb.runtime import tls

CLIENT_ID = "mediagen-nb"
OUT_OF_BAND = "urn:ietf:wg:oauth:2.0:oob"
TIMEOUT = 30.0


def _checked(url: Any, what: str) -> str:
    """An address from a server's document, used only if it is https (or http on this machine)."""
    if not isinstance(url, str) or not (urlsplit(url).scheme == "https" or on_this_machine(url)):
        raise errors.ServiceResponseError(
            f"the agent server's sign-in metadata gives no usable {what}: {url!r}"
        )
    return url


def _document(http: httpx.Client, url: str) -> dict[str, Any]:
    try:
        answer = http.get(url)
    except httpx.TransportError as exc:
        raise errors.ConnectionFailed(f"cannot reach {url}: {type(exc).__name__}") from None
    if answer.status_code != 200:
        raise errors.ServiceResponseError(f"{url} answered {answer.status_code}: the server shows no sign-in")
    try:
        document = answer.json()
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise errors.ServiceResponseError(f"{url} is not a JSON object")
    return document


def endpoints(server: str) -> tuple[str, str]:
    """The sign-in page and token endpoint of the agent server at ``server``, from its metadata."""
    parts = urlsplit(server)
    origin = f"{parts.scheme}://{parts.netloc}"
    with httpx.Client(timeout=TIMEOUT, follow_redirects=False, verify=tls.context()) as http:
        resource = _document(http, f"{origin}/.well-known/oauth-protected-resource{parts.path}")
        issuers = resource.get("authorization_servers")
        issuer = _checked(
            issuers[0] if isinstance(issuers, list) and issuers else None, "authorization server"
        )
        metadata = _document(http, issuer.rstrip("/") + "/.well-known/oauth-authorization-server")
    page = _checked(metadata.get("authorization_endpoint"), "authorization_endpoint")
    return page, _checked(metadata.get("token_endpoint"), "token_endpoint")


def sign_in(*, read: Callable[[str], str] = input, show: Callable[[str], None] = print) -> str:
    """Sign this process in to the current service's agent server: open the link shown, approve, and paste
    the code back (``show`` shows the link, ``read`` asks for the code). Returns the one line saying so."""
    server = agent_server()
    page, token_endpoint = endpoints(server)
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "redirect_uri": OUT_OF_BAND,
    }
    show(f"Sign in to the agent server at {server}: open {page}?{urlencode(query)} and approve")
    code = read("then paste the code it shows here: ").strip()
    if not code:
        raise errors.ConfigurationError("sign_in: no code was pasted; nothing was signed in")
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": verifier,
        "client_id": CLIENT_ID,
        "redirect_uri": OUT_OF_BAND,
    }
    try:
        answer = httpx.post(
            token_endpoint, data=form, timeout=TIMEOUT, follow_redirects=False, verify=tls.context()
        )
    except httpx.TransportError as exc:
        raise errors.ConnectionFailed(f"cannot reach {token_endpoint}: {type(exc).__name__}") from None
    body = answer.json() if answer.headers.get("content-type", "").startswith("application/json") else {}
    token = body.get("access_token") if isinstance(body, dict) else None
    if answer.status_code != 200 or not isinstance(token, str):
        reason = body.get("error_description") if isinstance(body, dict) else None
        raise errors.AuthenticationError(
            answer.status_code,
            f"sign-in refused: {reason or answer.status_code}; run sign_in() again for a new code",
        )
    signed_in(server, Secret(token))
    return f"signed in to the agent server at {server} for this process (the token is kept in memory only)"
