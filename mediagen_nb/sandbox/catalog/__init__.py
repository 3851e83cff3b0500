"""The sandbox's model catalog: 130 models (72 video, 41 image, 17 audio), as on 16 Sep 2026.

To change a price, a run time, an input or an example, edit ``models.toml`` (data, with shared schema
fragments and families); it is checked when loaded (``loader.py``). How prices are computed from it is
in ``sandbox/pricing.py``; the public record in ``records.py``; ``documents.py`` fills the OpenAPI
template ``openapi.json`` and writes llms.txt; ``handlers.py`` answers the catalog endpoints.

The spec fixes gpt-image-2, zonos2, the two infinitetalk lip-sync models, seven speech models and the
five replication video models; the rest are invented but shaped like real ones, so that together the
schemas use every JSON Schema feature a client must handle and every billing method.


A sandbox serves the bundled catalog, or a snapshot of a service's that ``mediagen sandbox sync``
wrote (``snapshot.py``; ``mediagen sandbox --catalog DIR``), as a :class:`Catalog`.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from mediagen_nb.sandbox.catalog.loader import load
from mediagen_nb.sandbox.catalog.model import ModelSpec, output_seconds, simulated_runtime
from mediagen_nb.sandbox.catalog.records import example_record, record

MODELS, REPLICATION_MODELS = load()
BY_ID: dict[str, ModelSpec] = {model.id: model for model in MODELS}
BUNDLED_DATE = "2026-09-16"  # the day models.toml shows


@dataclass(frozen=True)
class Catalog:
    """The models one sandbox serves: the bundled ones, or a snapshot of a service's catalog."""

    models: tuple[ModelSpec, ...]
    source: str = "bundled"  # "bundled", or the snapshot's folder
    date: str = BUNDLED_DATE  # the day it shows
    # Model id -> why the sandbox's price of it is an approximation (a pricing type it does not know, an
    # option price the catalog does not list): said in its estimates, /_sandbox/info and sync's report.
    flagged: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def by_id(self) -> dict[str, ModelSpec]:
        return {model.id: model for model in self.models}

    def spec(self, model_id: str) -> ModelSpec:
        """A model by id: this catalog's, else the bundled one (a replication model a snapshot lacks,
        a state saved under another catalog); KeyError for neither."""
        found = self.by_id.get(model_id)
        return found if found is not None else BY_ID[model_id]

    def describe(self) -> dict[str, object]:
        """What /_sandbox/info says of it."""
        flagged = dict(self.flagged)
        return {"source": self.source, "date": self.date, "models": len(self.models), "flagged": flagged}


BUNDLED = Catalog(MODELS)

__all__ = [
    "BUNDLED",
    "BY_ID",
    "MODELS",
    "REPLICATION_MODELS",
    "Catalog",
    "ModelSpec",
    "example_record",
    "output_seconds",
    "record",
    "simulated_runtime",
]
