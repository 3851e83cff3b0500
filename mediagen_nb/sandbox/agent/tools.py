"""The agent server's nine tools: each one's input schema, and what it does with the sandbox's backends.

Every start goes through the same backend call as its REST endpoint, so it is charged, refunded,
limited (the account's 60 starts a minute, shared with REST) and webhooked exactly alike, into the same
ledger. A result is the resource the REST API would answer (the ``data`` of its envelope); a refusal is
an error result whose text is the service's message and whose structured content is the REST error
body (``statusCode``, ``message``, ``error``). Reads are free: ``generate`` with ``generationId``,
``analyze_video`` with ``analysisId``, ``replicate_video`` with ``runId``, and ``get_mascot``; ``wait``
holds a tool up to 55 simulated seconds for its work to end, like ``GET /v1/generations/{id}?wait=``.
The same ``idempotencyKey`` again returns what it started, at no charge.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mediagen_nb.protocol import limits, messages, replication, states, wire
from mediagen_nb.sandbox import lifecycle
from mediagen_nb.sandbox.accounts import Caller
from mediagen_nb.sandbox.agent import avatars
from mediagen_nb.sandbox.agent.usage import USAGE_FIELDS, check_usage
from mediagen_nb.sandbox.responses import ServiceError, bad_request
from mediagen_nb.sandbox.topic_video import options as video_options

if TYPE_CHECKING:
    from mediagen_nb.sandbox.world import World

POLL_SECONDS = 1.0  # simulated seconds between looks at a run or job a tool waits for
ENDED = frozenset({states.SUCCEEDED, states.FAILED, states.READY, states.DONE})


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool: the world, who called, their address, and the fault drawn for it."""

    world: "World"
    caller: Caller
    base_url: str
    fault: str | None

    @property
    def at_capacity(self) -> bool:
        return self.fault == "503"


Handler = Callable[[ToolCall, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    output_schema: dict[str, Any] | None = None


def _string(description: str, **more: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **more}


def _bool(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


WAIT = {
    "type": "integer",
    "minimum": 0,
    "maximum": limits.WAIT_MAX_SECONDS,
    "description": "hold up to this many seconds for the work to end (0: answer at once)",
}
WEBHOOK = _string("https URL called when the work ends (the service's webhook)")
IDEMPOTENCY_ARG = "idempotencyKey"
IDEMPOTENCY = _string(
    "the same key again returns what it started, at no charge; printable ASCII, as an HTTP header carries it"
)


def _wait(args: dict[str, Any]) -> float:
    return float(args.get("wait") or 0)


async def _until(call: ToolCall, ended: Callable[[], bool], wait: float) -> bool:
    """Hold up to ``wait`` simulated seconds until ``ended()``; whether it is still running then."""
    left = wait
    while left > 0 and not ended():
        step = min(left, POLL_SECONDS)
        await call.world.clock.wait(step)
        left -= step
    return not ended()


def _still(data: dict[str, Any], still: bool) -> dict[str, Any]:
    return {**data, "stillRunning": True} if still else data


# --- generate, and the avatars on top of it


async def _generation(
    call: ToolCall, model_id: Any, values: Any, args: dict[str, Any], key: str | None
) -> Any:
    gen, _ = await call.world.generations.start(
        call.caller,
        model_id,
        values,
        args.get("webhook"),
        idempotency_key=key,
        at_capacity=call.at_capacity,
        base_url=call.base_url,
    )
    return gen


async def _read_generation(call: ToolCall, gen_id: str, wait: float) -> dict[str, Any]:
    gen, still = await call.world.generations.read(call.caller, gen_id, int(wait))
    return _still(gen.public(call.world), still)


async def generate(call: ToolCall, args: dict[str, Any]) -> dict[str, Any]:
    if args.get("generationId"):
        return await _read_generation(call, args["generationId"], _wait(args))
    gen = await _generation(call, args.get("modelId"), args.get("input"), args, args.get(IDEMPOTENCY_ARG))
    return await _read_generation(call, gen.id, _wait(args))


async def create_avatar(call: ToolCall, args: dict[str, Any]) -> dict[str, Any]:
    values = avatars.portrait_input(args)
    gen = await _generation(call, avatars.PORTRAIT_MODEL, values, args, args.get(IDEMPOTENCY_ARG))
    return await _read_generation(call, gen.id, _wait(args))


async def avatar_say(call: ToolCall, args: dict[str, Any]) -> dict[str, Any]:
    if args.get("webhook") is not None:  # the lip-sync's, refused before the speech is paid for
        await call.world.outbox.check(args["webhook"])
    key = args.get(IDEMPOTENCY_ARG)
    model_id, values = avatars.speech_run(args)
    speech = await _generation(call, model_id, values, {}, f"{key}:speech" if key else None)
    await speech.done.wait()  # the lip-sync needs the audio; a run always ends (its time limit)
    if speech.status != states.SUCCEEDED:
        raise bad_request(f"avatar_say: the speech ({model_id}) failed and was refunded: {speech.error}")
    assert speech.output is not None
    model_id, values = avatars.lipsync_run(args, speech.output["urls"][0])
    video = await _generation(call, model_id, values, args, f"{key}:video" if key else None)
    return {"speech": speech.public(call.world), "video": await _read_generation(call, video.id, _wait(args))}


# --- replication


async def analyze_video(call: ToolCall, args: dict[str, Any]) -> dict[str, Any]:
    backend = call.world.replication
    if args.get("analysisId"):
        analysis_id = args["analysisId"]
    elif args.get("url"):
        started, _ = await backend.analyze(
            call.caller,
            args["url"],
            idempotency_key=args.get(IDEMPOTENCY_ARG),
            at_capacity=call.at_capacity,
            base_url=call.base_url,
        )
        analysis_id = started.id
    else:
        raise bad_request("analyze_video: give url to analyze a video, or analysisId to read an analysis")
    still = await _until(
        call, lambda: backend.analysis(call.caller, analysis_id).status in ENDED, _wait(args)
    )
    return _still(backend.analysis(call.caller, analysis_id).public(), still)


REPLICATE_FIELDS = ("modelId", "quality", "accuracy", "clips", "characterImage", "captions", "audio")


async def replicate_video(call: ToolCall, args: dict[str, Any]) -> dict[str, Any]:
    backend = call.world.replication
    if args.get("runId"):
        run_id = args["runId"]
    elif args.get("analysisId"):
        body = {
            name: args[name] for name in (*REPLICATE_FIELDS, "marketingAspect", "webhook") if name in args
        }
        run, _ = await backend.replicate(
            call.caller,
            args["analysisId"],
            body,
            idempotency_key=args.get(IDEMPOTENCY_ARG),
            at_capacity=call.at_capacity,
            base_url=call.base_url,
        )
        run_id = run.id
    else:
        raise bad_request("replicate_video: give analysisId to render a replica, or runId to read a run")
    still = await _until(call, lambda: backend.run(call.caller, run_id).status in ENDED, _wait(args))
    return _still(backend.run(call.caller, run_id).public(call.world), still)


# --- topic-to-video


async def _job(call: ToolCall, job_id: str, wait: float) -> dict[str, Any]:
    topic = call.world.topic
    still = await _until(call, lambda: topic.job(call.caller, job_id).status in ENDED, wait)
    return _still(topic.job(call.caller, job_id).public(call.world), still)


def job_fields(names: wire.Names) -> tuple[str, ...]:
    """The start body's names in ``names``: make_video takes its arguments under the same names."""
    return (
        names.job_topic,
        names.job_seconds,
        names.job_gender,
        names.job_look,
        names.job_voice,
        names.job_flow,
        names.job_captions,
        names.job_music,
        names.job_idempotency,
        names.job_webhook,
    )


async def make_video(call: ToolCall, args: dict[str, Any]) -> dict[str, Any]:
    body = {name: args[name] for name in job_fields(call.world.wire) if name in args}
    job, _ = await call.world.topic.start(
        call.caller, body, at_capacity=call.at_capacity, base_url=call.base_url
    )
    return await _job(call, job.id, _wait(args))


async def get_mascot(call: ToolCall, args: dict[str, Any]) -> dict[str, Any]:
    return await _job(call, args["jobId"], _wait(args))


async def reedit_video(call: ToolCall, args: dict[str, Any]) -> dict[str, Any]:
    body = {name: args[name] for name in (wire.JOB_FLOW, wire.JOB_CAPTIONS, wire.JOB_MUSIC) if name in args}
    job = call.world.topic.reedit(
        call.caller, args["jobId"], body, at_capacity=call.at_capacity, base_url=call.base_url
    )
    return await _job(call, job.id, _wait(args))


# --- usage


async def usage(call: ToolCall, args: dict[str, Any]) -> dict[str, Any]:
    return check_usage(call.world, call.caller.account, call.base_url)


def _tools(names: wire.Names = wire.DEFAULT) -> list[Tool]:
    flows = list(video_options.FLOWS)
    job_edit = {  # the re-edit's names are the spec's own
        wire.JOB_FLOW: _string("edit style", enum=flows),
        wire.JOB_CAPTIONS: _bool("apply the edit and burned-in captions (default true)"),
        wire.JOB_MUSIC: _bool("lay a background music bed (default true)"),
    }
    voices = [voice for offered in video_options.VOICES.values() for voice in offered]
    return [
        Tool(
            "generate",
            "Run a catalog model, like POST /v1/run (charged at the model's price); or read a generation "
            "with generationId (free). Results are the Generation resource.",
            _object(
                {
                    "modelId": _string("a catalog model id, e.g. gpt-image-2"),
                    "input": {"type": "object", "description": "the model's inputs, per its input_schema"},
                    "webhook": WEBHOOK,
                    IDEMPOTENCY_ARG: IDEMPOTENCY,
                    "generationId": _string("read this generation instead of starting one"),
                    "wait": WAIT,
                }
            ),
            generate,
        ),
        Tool(
            "analyze_video",
            f"Analyze a short video into a shot-by-shot blueprint ({limits.ANALYSIS_CREDITS} credits flat), "
            "like POST /v1/analyze; or read an analysis with analysisId (free).",
            _object(
                {
                    "url": _string(
                        "https link to a TikTok, YouTube or Instagram video, or a .mp4/.mov/.webm"
                    ),
                    "analysisId": _string("read this analysis instead of starting one"),
                    IDEMPOTENCY_ARG: IDEMPOTENCY,
                    "wait": WAIT,
                }
            ),
            analyze_video,
        ),
        Tool(
            "replicate_video",
            "Render a replica of an analyzed video clip by clip, like POST /v1/analyses/{id}/replicate "
            "(each clip charged at the model's price as it renders); or read a run with runId (free).",
            _object(
                {
                    "analysisId": _string("the ready analysis to replicate"),
                    "runId": _string("read this run instead of starting one"),
                    "modelId": _string("the video model for every clip", enum=list(replication.MODELS)),
                    "quality": _string("quality", enum=list(replication.QUALITIES)),
                    "accuracy": _string("how clips share generations", enum=list(replication.ACCURACIES)),
                    "clips": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    "characterImage": _string("https image of a person or product replacing the subject"),
                    "captions": _bool("burn the original's text overlays into the replica"),
                    "audio": {
                        "type": "object",
                        "properties": {
                            "mode": _string("", enum=list(replication.AUDIO_MODES)),
                            "url": _string(""),
                        },
                        "required": ["mode"],
                    },
                    "marketingAspect": _string(
                        "aspect of the marketing cut", enum=list(replication.MARKETING_ASPECTS)
                    ),
                    "webhook": WEBHOOK,
                    IDEMPOTENCY_ARG: IDEMPOTENCY,
                    "wait": WAIT,
                }
            ),
            replicate_video,
        ),
        Tool(
            "make_video",
            "Make a short presenter video about a topic (script, portrait, voice, lip-sync, edit), like POST "
            "{topic-to-video root}; charged as the generations it runs, fully refunded if it fails.",
            _object(
                {
                    names.job_topic: _string("what the video is about (cut near 900 characters)"),
                    names.job_seconds: {
                        "type": "number",
                        "minimum": limits.SHORT_VIDEO_SECONDS_MIN,
                        "maximum": limits.SHORT_VIDEO_SECONDS_MAX,
                        "description": "target length in seconds",
                    },
                    names.job_gender: _string("presenter gender", enum=list(video_options.GENDERS)),
                    names.job_look: _string("presenter look", enum=list(video_options.LOOKS)),
                    names.job_voice: _string("a voice of the chosen gender", enum=voices),
                    names.job_flow: _string("edit style", enum=flows),
                    names.job_captions: _bool("apply the edit and burned-in captions (default true)"),
                    names.job_music: _bool("lay a background music bed (default true)"),
                    names.job_idempotency: IDEMPOTENCY,
                    names.job_webhook: WEBHOOK,
                    "wait": WAIT,
                }
            ),
            make_video,
        ),
        Tool(
            "get_mascot",
            "Read a short presenter video job (free): its status, script, portrait, video and credits.",
            _object({"jobId": _string("the job's id"), "wait": WAIT}, ("jobId",)),
            get_mascot,
        ),
        Tool(
            "reedit_video",
            "Re-cut a finished short video in another edit style, reusing its script, voice and lip-sync; "
            "returns the new job (charged for the edit steps).",
            _object(
                {"jobId": _string("a job of yours with a lip-sync"), **job_edit, "wait": WAIT}, ("jobId",)
            ),
            reedit_video,
        ),
        Tool(
            "create_avatar",
            f"Make a presenter portrait: one {avatars.PORTRAIT_MODEL} image, charged at its price.",
            _object(
                {
                    "description": _string("who the presenter is, in words"),
                    "gender": _string("presenter gender", enum=list(avatars.GENDERS)),
                    "look": _string("presenter look", enum=list(avatars.LOOKS)),
                    "quality": _string("image quality (higher costs more)", enum=["low", "medium", "high"]),
                    "aspectRatio": _string("image aspect", enum=["1:1", "3:2", "2:3"]),
                    "webhook": WEBHOOK,
                    IDEMPOTENCY_ARG: IDEMPOTENCY,
                    "wait": WAIT,
                }
            ),
            create_avatar,
        ),
        Tool(
            "avatar_say",
            f"Make a portrait speak a text: a speech ({avatars.PRESET_SPEECH_MODEL} preset voice, or "
            f"{avatars.CLONED_SPEECH_MODEL} cloning voiceSample), then a lip-sync "
            f"({', '.join(avatars.LIPSYNC_MODELS.values())}); each charged at its price.",
            _object(
                {
                    "image": _string("https URL of the portrait (e.g. create_avatar's output)"),
                    "text": _string("what the presenter says"),
                    "voice": _string("a preset voice", enum=avatars.voices()),
                    "voiceSample": _string("https .mp3/.wav sample of a voice to clone instead"),
                    "resolution": _string("video resolution", enum=list(avatars.LIPSYNC_MODELS)),
                    "webhook": WEBHOOK,
                    IDEMPOTENCY_ARG: IDEMPOTENCY,
                    "wait": WAIT,
                },
                ("image", "text"),
            ),
            avatar_say,
        ),
        Tool(
            "check_usage",
            "What the account has left and this calendar month's credits and runs (failed runs left out); "
            "the only place the service tells the balance.",
            _object({}),
            usage,
            output_schema=_object(
                {
                    "remainingCredits": {"type": "integer"},
                    "monthCredits": {"type": "integer"},
                    "monthRuns": {"type": "integer"},
                    "monthApiRuns": {"type": "integer"},
                    "topUpUrl": {"type": "string"},
                },
                USAGE_FIELDS,
            ),
        ),
    ]


TOOLS: dict[str, Tool] = {tool.name: tool for tool in _tools()}
_SPELT: dict[str, dict[str, Tool]] = {}  # by the names file of a spelling


def spelt(names: wire.Names) -> dict[str, Tool]:
    """The tools as a sandbox speaking ``names`` lists them (make_video's arguments are the start body's)."""
    if names == wire.DEFAULT:
        return TOOLS
    key = wire.dump(names)
    if key not in _SPELT:
        _SPELT[key] = {tool.name: tool for tool in _tools(names)}
    return _SPELT[key]


STARTS = frozenset(TOOLS) - {"get_mascot", "check_usage"}  # tools that may start paid work


async def call(
    world: "World", caller: Caller, base_url: str, name: str, args: dict[str, Any]
) -> dict[str, Any]:
    """Run tool ``name``; a refusal raises ServiceError with the service's status and message."""
    fault = world.faults.draw("mcp")
    if fault == "slow":
        await world.clock.wait(world.faults.slow_seconds * world.clock.scale)
    elif fault == "429":
        raise ServiceError(429, messages.KEY_RATE_LIMIT if caller.key else messages.TOKEN_RATE_LIMIT)
    elif fault in ("500", "drop"):
        raise ServiceError(500, messages.SERVER_ERROR)
    elif fault == "503" and name not in STARTS:
        raise ServiceError(503, messages.AT_CAPACITY)
    # The fields REST carries elsewhere (the key in a header) are checked by REST's rules before any
    # start; the others go to the same backends as REST's bodies, which check them.
    lifecycle.idempotency_key(args.get(IDEMPOTENCY_ARG), IDEMPOTENCY_ARG)
    return await spelt(world.wire)[name].handler(ToolCall(world, caller, base_url, fault), args)
