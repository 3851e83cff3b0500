"""The catalog endpoints over HTTP: models, one model, openapi.json, llms.txt; no key, not rate counted."""

import io
import re
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate
from PIL import Image

from mediagen_nb.protocol import messages, wire
from mediagen_nb.protocol.paths import PATHS, path
from mediagen_nb.sandbox import Sandbox, SandboxConfig, catalog
from mediagen_nb.sandbox.media import measure_seconds

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHOSEN_FIELDS = {
    wire.MODEL_ID,
    wire.MODEL_NAME,
    wire.MODEL_DESCRIPTION,
    wire.MODEL_OUTPUT_TYPE,
    wire.MODEL_GROUP,
    wire.MODEL_CREDITS,
    wire.MODEL_PREVIEW,
    wire.MODEL_LINKS,
    "input_schema",
    "pricing",
}
WITH_EXAMPLE = "gpt-image-2"
WITHOUT_EXAMPLE = "flare-1-dev"


async def _models(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await client.get(path("models"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True
    return body["data"][wire.MODELS_LIST]


@pytest.fixture
async def anonymous(sandbox: Sandbox) -> AsyncIterator[httpx.AsyncClient]:
    """A client with no Authorization header at all."""
    async with httpx.AsyncClient(
        transport=sandbox.transport(), base_url="http://sandbox.test", timeout=30
    ) as c:
        yield c


@pytest.mark.anyio
async def test_models_list_counts_and_fields(anonymous: httpx.AsyncClient) -> None:
    """130 records, 72 video / 41 image / 17 audio, each with exactly the chosen field names."""
    models = await _models(anonymous)
    assert len(models) == 130
    assert Counter(m[wire.MODEL_OUTPUT_TYPE] for m in models) == {"video": 72, "image": 41, "audio": 17}
    assert len({m[wire.MODEL_ID] for m in models}) == 130
    for record in models:
        assert set(record) == CHOSEN_FIELDS, record[wire.MODEL_ID]
        assert "example" not in record
        assert isinstance(record[wire.MODEL_CREDITS], int) and not isinstance(
            record[wire.MODEL_CREDITS], bool
        )
        schema = record["input_schema"]
        assert schema["type"] == "object"
        assert set(schema.get("required", [])) <= set(schema["properties"])
        pricing = record["pricing"]
        if pricing is not None:
            assert set(pricing) >= {"type", "varies_by"}
            assert isinstance(pricing["type"], str) and pricing["type"]
            assert isinstance(pricing["varies_by"], list) and pricing["varies_by"]
        links = record[wire.MODEL_LINKS]
        assert links["run"] == "http://sandbox.test" + path("run")
        assert links["poll"].startswith("http://sandbox.test" + PATHS["generation"].split("{")[0])


@pytest.mark.anyio
async def test_models_match_the_catalog(anonymous: httpx.AsyncClient) -> None:
    """The records carry the catalog's schemas and pricing unchanged; known fixed pricing rules."""
    by_id = {m[wire.MODEL_ID]: m for m in await _models(anonymous)}
    for spec in catalog.MODELS:
        assert by_id[spec.id]["input_schema"] == spec.input_schema
        assert by_id[spec.id]["pricing"] == spec.pricing
    assert set(by_id["infinitetalk"]["pricing"]["varies_by"]) == {"audio", "resolution"}
    assert "quality" in by_id["gpt-image-2"]["pricing"]["varies_by"]
    assert set(by_id["zonos2"]["input_schema"]["required"]) == {"text", "audio"}


@pytest.mark.anyio
async def test_preview_url_downloads_as_png(anonymous: httpx.AsyncClient) -> None:
    """A catalog record's preview URL serves a decodable PNG."""
    models = await _models(anonymous)
    for record in (models[0], models[64], models[-1]):
        response = await anonymous.get(record[wire.MODEL_PREVIEW])
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("image/png")
        assert response.content.startswith(PNG_MAGIC)
        with Image.open(io.BytesIO(response.content)) as image:
            assert image.format == "PNG" and image.width > 0


@pytest.mark.anyio
async def test_single_model_with_example(anonymous: httpx.AsyncClient) -> None:
    """/models/{id} is the list record plus ``example``, whose output URL downloads."""
    listed = {m[wire.MODEL_ID]: m for m in await _models(anonymous)}
    response = await anonymous.get(path("model", id=WITH_EXAMPLE))
    assert response.status_code == 200
    data = response.json()["data"]
    example = data.pop("example")
    assert data == listed[WITH_EXAMPLE]
    assert example["output"]["type"] == "image"
    got = await anonymous.get(example["output"]["url"])
    assert got.status_code == 200 and got.content.startswith(PNG_MAGIC)


@pytest.mark.anyio
async def test_every_example_downloads(anonymous: httpx.AsyncClient) -> None:
    """Every model with an example has one on its endpoint; audio examples are readable audio."""
    for spec in catalog.MODELS:
        if spec.example is None:
            continue
        example = (await anonymous.get(path("model", id=spec.id))).json()["data"]["example"]
        url = example["output"]["url"]
        assert url.startswith("http://sandbox.test/")
        assert example["output"]["type"] == spec.kind
        got = await anonymous.get(url)
        assert got.status_code == 200, url
        if spec.kind == "audio" and url.endswith((".wav", ".mp3")):
            assert measure_seconds(got.content, "." + url.rsplit(".", 1)[-1]) is not None
        for value in example.get("input", {}).values():
            if isinstance(value, str) and "/_sandbox/" in value:
                assert value.startswith("http://sandbox.test/")


@pytest.mark.anyio
async def test_single_model_without_example(anonymous: httpx.AsyncClient) -> None:
    """A model without an example has no ``example`` key at all."""
    assert catalog.BY_ID[WITHOUT_EXAMPLE].example is None
    response = await anonymous.get(path("model", id=WITHOUT_EXAMPLE))
    assert response.status_code == 200
    data = response.json()["data"]
    assert "example" not in data
    assert set(data) == CHOSEN_FIELDS


@pytest.mark.anyio
async def test_unknown_model_is_404(anonymous: httpx.AsyncClient) -> None:
    """The spec's 404 message, listing available models, in the error object format."""
    response = await anonymous.get(path("model", id="no-such-model"))
    assert response.status_code == 404
    body = response.json()
    assert body == {
        "statusCode": 404,
        "message": messages.model_not_found(m.id for m in catalog.MODELS),
        "error": "Not Found",
    }
    assert body["message"].startswith("Model not found. Available models: ")
    assert "gpt-image-2" in body["message"] and "zonos2" in body["message"]


@pytest.mark.anyio
async def test_openapi_document(anonymous: httpx.AsyncClient) -> None:
    """A valid OpenAPI 3.1 document with both paths and Input_<modelId> for every model."""
    response = await anonymous.get(path("openapi"))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    document = response.json()
    assert document["openapi"].startswith("3.1")
    validate(document)
    assert "/v1/run" in document["paths"] and "post" in document["paths"]["/v1/run"]
    assert "/v1/generations/{id}" in document["paths"]
    assert "get" in document["paths"]["/v1/generations/{id}"]
    server = document["servers"][0]["url"]
    assert server + "/v1/run" == "http://sandbox.test" + path("run")
    schemas = document["components"]["schemas"]
    models = await _models(anonymous)
    for record in models:
        assert schemas[f"Input_{record[wire.MODEL_ID]}"] == record["input_schema"]
    assert len([name for name in schemas if name.startswith("Input_")]) == len(models)


@pytest.mark.anyio
async def test_llms_txt(anonymous: httpx.AsyncClient) -> None:
    """Plain text naming every model id with its output type and required inputs."""
    response = await anonymous.get(path("llms_txt"))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    lines = response.text.splitlines()
    for record in await _models(anonymous):
        model_id = record[wire.MODEL_ID]
        word = re.compile(rf"(?<![\w.-]){re.escape(model_id)}(?![\w.-])")
        line = next((x for x in lines if word.search(x)), None)
        assert line is not None, model_id
        assert record[wire.MODEL_OUTPUT_TYPE] in line
        for name in record["input_schema"].get("required", []):
            assert name in line, (model_id, name)


@pytest.mark.anyio
async def test_catalog_needs_no_key_even_with_a_bad_one(sandbox: Sandbox) -> None:
    """A wrong key on a catalog endpoint is ignored, not refused."""
    async with httpx.AsyncClient(
        transport=sandbox.transport(),
        base_url="http://sandbox.test",
        headers={"Authorization": "Bearer nope"},
    ) as client:
        for name, params in (("models", {}), ("model", {"id": "zonos2"}), ("openapi", {}), ("llms_txt", {})):
            assert (await client.get(path(name, **params))).status_code == 200


@pytest.mark.anyio
async def test_catalog_calls_do_not_count_toward_the_key_limit() -> None:
    """100 catalog calls with the key, then 60 authenticated calls all pass; the 61st is refused."""
    sandbox = Sandbox(SandboxConfig(clock="manual", seed=1))
    async with httpx.AsyncClient(
        transport=sandbox.transport(),
        base_url="http://sandbox.test",
        headers={"Authorization": f"Bearer {sandbox.demo_key}"},
        timeout=30,
    ) as client:
        endpoints = [path("models"), path("model", id="zonos2"), path("openapi"), path("llms_txt")]
        for i in range(100):
            assert (await client.get(endpoints[i % 4])).status_code == 200
        body = {"modelId": "gpt-image-2", "input": {"prompt": "a lighthouse"}}
        for _ in range(60):
            response = await client.post(path("estimate"), json=body)
            assert response.status_code == 200, response.text
        refused = await client.post(path("estimate"), json=body)
        assert refused.status_code == 429
        assert refused.json() == messages.KEY_RATE_LIMIT
        assert (await client.get(path("models"))).status_code == 200


@pytest.mark.anyio
async def test_unknown_path_error_body(anonymous: httpx.AsyncClient) -> None:
    """A 404 on a path that does not exist uses the statusCode/message/error object."""
    response = await anonymous.get("/v3/playground/v1/nothing-here")
    assert response.status_code == 404
    body = response.json()
    assert set(body) == {"statusCode", "message", "error"}
    assert body["statusCode"] == 404 and body["error"] == "Not Found"
    assert isinstance(body["message"], str) and "/v3/playground/v1/nothing-here" in body["message"]


@pytest.mark.anyio
async def test_wrong_method_error_body(anonymous: httpx.AsyncClient) -> None:
    """A wrong method on a catalog path answers 405 in the same object format."""
    response = await anonymous.post(path("models"))
    assert response.status_code == 405
    body = response.json()
    assert body["statusCode"] == 405 and isinstance(body["message"], str) and "error" in body
