"""The sandbox's model catalog: 130 models (72 video, 41 image, 17 audio), as on 16 Sep 2026.

To change a price, a run time, an input or an example, edit ``models.toml`` (data, with shared schema
fragments and families); it is checked when loaded (``loader.py``). How prices are computed from it is
in ``sandbox/pricing.py``; the public record in ``records.py``; ``documents.py`` fills the OpenAPI
template ``openapi.json`` and writes llms.txt; ``handlers.py`` answers the catalog endpoints.

The spec fixes gpt-image-2, zonos2, the two infinitetalk lip-sync models, seven speech models and the
five replication video models; the rest are invented but shaped like real ones, so that together the
schemas use every JSON Schema feature a client must handle and every billing method.
"""

from mediagen_nb.sandbox.catalog.loader import load
from mediagen_nb.sandbox.catalog.model import ModelSpec, output_seconds, simulated_runtime
from mediagen_nb.sandbox.catalog.records import example_record, record

MODELS, REPLICATION_MODELS = load()
BY_ID: dict[str, ModelSpec] = {model.id: model for model in MODELS}

__all__ = [
    "BY_ID",
    "MODELS",
    "REPLICATION_MODELS",
    "ModelSpec",
    "example_record",
    "output_seconds",
    "record",
    "simulated_runtime",
]
