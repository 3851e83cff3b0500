"""The sandbox's one route table: every path of the service's three roots and of ``/_sandbox/``, each
bound to its handler function (so "go to definition" on a route lands on the code that answers it).

Paths come from ``mediagen_nb.protocol.paths`` by name; that name is also what a fault plan's
``routes`` lists. Service routes run through ``pipeline.service_endpoint`` (key, request limit, faults);
``start=True`` marks the paid starts, where a 503 fault is charged and refunded in the same request.
"""

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mediagen_nb.protocol.paths import GENERATION_ROOT, PATHS, REPLICATION_ROOT, SANDBOX_ROOT, TOPIC_ROOT
from mediagen_nb.sandbox import control, guard
from mediagen_nb.sandbox.agent import Mount as AgentMount
from mediagen_nb.sandbox.agent import access as agent_access
from mediagen_nb.sandbox.catalog import handlers as catalog
from mediagen_nb.sandbox.generation import handlers as generation
from mediagen_nb.sandbox.pipeline import Handler, control_endpoint, service_endpoint
from mediagen_nb.sandbox.replication import handlers as replication
from mediagen_nb.sandbox.topic_video import handlers as topic_video

# Path parameters that may hold a slash: share pages (``r/<run id>``), and upload names (so a name
# with a slash reaches the handler and is refused with a message, not a bare 404).
_CONVERTERS = {"sandbox_app": ("{page}", "{page:path}"), "sandbox_upload": ("{name}", "{name:path}")}


def _path(name: str) -> str:
    template = PATHS[name]
    if name in _CONVERTERS:
        template = template.replace(*_CONVERTERS[name])
    return template


def _service(name: str, method: str, handler: Handler, *, key: bool = True, start: bool = False) -> Route:
    endpoint = service_endpoint(name, handler, authenticated=key, start=start)
    return Route(_path(name), endpoint, methods=[method])


def _control(
    name: str, methods: list[str], handler: control.Endpoint, *, key: bool = False, browsers: bool = False
) -> Route:
    return Route(_path(name), control_endpoint(handler, key=key, browsers=browsers), methods=methods)


async def index(request: Request) -> Response:
    """GET /: what this server is and where its roots are."""
    base = str(request.base_url).rstrip("/")
    return JSONResponse(
        {
            "service": "mediagen sandbox",
            "roots": {
                "generation": base + GENERATION_ROOT,
                "replication": base + REPLICATION_ROOT,
                "topicToVideo": base + TOPIC_ROOT,
                "sandbox": base + SANDBOX_ROOT,
                "agent": base + PATHS["mcp"],
            },
        }
    )


ROUTES: list[Route] = [
    Route("/", index, methods=["GET"]),
    # Generation API: catalog (no key, not counted), runs, estimates.
    _service("models", "GET", catalog.models, key=False),
    _service("model", "GET", catalog.model, key=False),
    _service("openapi", "GET", catalog.openapi, key=False),
    _service("llms_txt", "GET", catalog.llms_txt, key=False),
    _service("run", "POST", generation.start, start=True),
    _service("generation", "GET", generation.read),
    _service("estimate", "POST", generation.estimate),
    # Replication API
    _service("analyze", "POST", replication.analyze, start=True),
    _service("analysis", "GET", replication.read_analysis),
    _service("blueprint", "POST", replication.build_blueprint),
    _service("replicate", "POST", replication.replicate, start=True),
    _service("replication_run", "GET", replication.read_run),
    # Topic-to-video API: ``options`` before ``{jobId}``, which would match it.
    _service("job_start", "POST", topic_video.start, start=True),
    _service("job_options", "GET", topic_video.options),
    _service("job", "GET", topic_video.read),
    _service("reedit", "POST", topic_video.reedit, start=True),
    # The agent (MCP) server and the sign-in of its OAuth clients (sandbox/agent/).
    Route(PATHS["mcp"], AgentMount(), methods=["GET", "POST", "DELETE"]),
    Route(PATHS["oauth_metadata"], agent_access.server_metadata, methods=["GET"]),
    Route(PATHS["oauth_resource"], agent_access.resource_metadata, methods=["GET"]),
    Route(PATHS["oauth_authorize"], agent_access.authorize, methods=["GET", "POST"]),
    Route(PATHS["oauth_token"], agent_access.token, methods=["POST"]),
    # Sandbox controls: no faults, never under the service's roots, refused to pages of other sites;
    # uploads need the account's key. Media reads (and the web app's stand-in pages) are for any page.
    _control("sandbox_info", ["GET"], control.info),
    _control("sandbox_hello", ["GET"], guard.hello),
    _control("sandbox_keys", ["POST"], control.create_key),
    _control("sandbox_account", ["GET", "POST"], control.account),
    _control("sandbox_ledger", ["GET"], control.ledger),
    _control("sandbox_faults", ["GET", "POST"], control.faults),
    _control("sandbox_app_runs", ["POST"], control.app_runs),
    _control("sandbox_reset", ["POST"], control.reset),
    _control("sandbox_webhooks", ["GET"], control.webhooks),
    _control("sandbox_clock", ["POST"], control.clock),
    _control("sandbox_media", ["GET"], control.media, browsers=True),
    _control("sandbox_samples", ["GET"], control.samples, browsers=True),
    _control("sandbox_uploads", ["GET"], control.list_uploads, key=True),
    _control("sandbox_upload", ["PUT"], control.put_upload, key=True),
    _control("sandbox_upload", ["GET"], control.get_upload, browsers=True),
    _control("sandbox_app", ["GET"], control.app_page, browsers=True),
]
