"""Every path of the service and of the sandbox's control API, in one table.

The spec writes endpoints relative to their root (``POST /v1/run`` under the generation root
``{base_url}/v3/playground/v1``); the spec's ``/v1`` is that root's own ``v1`` segment, so the full
path is ``/v3/playground/v1/run``.
"""

from urllib.parse import quote

GENERATION_ROOT = "/v3/playground/v1"
REPLICATION_ROOT = "/v3/replicate/v1"
TOPIC_ROOT = "/v3/mascot/api"
SANDBOX_ROOT = "/_sandbox"

PATHS: dict[str, str] = {
    # Generation API
    "run": f"{GENERATION_ROOT}/run",
    "generation": f"{GENERATION_ROOT}/generations/{{id}}",
    "estimate": f"{GENERATION_ROOT}/estimate",
    "models": f"{GENERATION_ROOT}/models",
    "model": f"{GENERATION_ROOT}/models/{{id}}",
    "openapi": f"{GENERATION_ROOT}/openapi.json",
    "llms_txt": f"{GENERATION_ROOT}/llms.txt",
    # Replication API
    "analyze": f"{REPLICATION_ROOT}/analyze",
    "analysis": f"{REPLICATION_ROOT}/analyses/{{id}}",
    "blueprint": f"{REPLICATION_ROOT}/analyses/{{id}}/blueprint",
    "replicate": f"{REPLICATION_ROOT}/analyses/{{id}}/replicate",
    "replication_run": f"{REPLICATION_ROOT}/runs/{{id}}",
    # Topic-to-video API
    "job_start": TOPIC_ROOT,
    "job_options": f"{TOPIC_ROOT}/options",
    "job": f"{TOPIC_ROOT}/{{id}}",
    "reedit": f"{TOPIC_ROOT}/{{id}}/reedit",
    # The agent (MCP) server, the spec's {mcp_url}: a sandbox serves it at its own address, with the
    # minimal OAuth sign-in of agent clients beside it (mediagen_nb/sandbox/agent/access.py).
    "mcp": "/mcp",
    "oauth_metadata": "/.well-known/oauth-authorization-server",
    "oauth_resource": "/.well-known/oauth-protected-resource/mcp",
    "oauth_authorize": "/oauth/authorize",
    "oauth_token": "/oauth/token",
    # Sandbox only: never under the service's roots.
    "sandbox_info": f"{SANDBOX_ROOT}/info",
    "sandbox_hello": f"{SANDBOX_ROOT}/hello",  # a kept sandbox proves it is its owner's (ownership.py)
    "sandbox_keys": f"{SANDBOX_ROOT}/keys",
    "sandbox_account": f"{SANDBOX_ROOT}/account",
    "sandbox_ledger": f"{SANDBOX_ROOT}/ledger",
    "sandbox_faults": f"{SANDBOX_ROOT}/faults",
    "sandbox_reset": f"{SANDBOX_ROOT}/reset",
    "sandbox_webhooks": f"{SANDBOX_ROOT}/webhooks",
    "sandbox_clock": f"{SANDBOX_ROOT}/clock",
    "sandbox_media": f"{SANDBOX_ROOT}/media/{{name}}",
    "sandbox_samples": f"{SANDBOX_ROOT}/samples/{{name}}",
    "sandbox_uploads": f"{SANDBOX_ROOT}/uploads",
    "sandbox_upload": f"{SANDBOX_ROOT}/uploads/{{name}}",
    "sandbox_app": f"{SANDBOX_ROOT}/app/{{page}}",
    "sandbox_app_runs": f"{SANDBOX_ROOT}/app-runs",
}

# Endpoints that need no key and do not count toward a key's request limit.
CATALOG_PATHS = frozenset({"models", "model", "openapi", "llms_txt"})


# Parameters that span segments (a share page ``r/<run id>``); every other one is one segment.
MULTI_SEGMENT = frozenset({"page"})


def path(endpoint: str, /, **params: str) -> str:
    """The full path of ``endpoint`` with its ``{id}``-style parameters filled in, percent-escaped.

    A value can never leave its segment: ``/`` is escaped and ``.``/``..`` (which a URL resolves
    to another path) are refused, so an id from a webhook or a response cannot reach another path.
    """
    escaped = {}
    for name, value in params.items():
        text = str(value)
        if name not in MULTI_SEGMENT and text in ("", ".", ".."):
            raise ValueError(f"{name} {text!r} is not a path segment")
        escaped[name] = quote(text, safe="/" if name in MULTI_SEGMENT else "")
    return PATHS[endpoint].format(**escaped)


# The real service's {base_url}: not shown by the spec. There is deliberately no guess here (a guess
# would send keys to a host nobody checked); the client asks for MEDIAGEN_BASE_URL with a key.
SERVICE_BASE_URL: str | None = None
