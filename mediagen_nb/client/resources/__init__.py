"""The service's resources as frozen dataclasses, named after the spec, shown inline in notebooks.

One module per API (generation, replication, topic-to-video video), over one checked parser
(:mod:`.fields`). Wire names come from the spec's tables or, where the spec does not show them,
from :mod:`mediagen_nb.protocol.wire`.
"""

from mediagen_nb.client.resources.fields import wire_of
from mediagen_nb.client.resources.generation import Estimate, Generation, Model, Pricing
from mediagen_nb.client.resources.replication import Analysis, Blueprint, BlueprintBuild, ReplicationRun
from mediagen_nb.client.resources.video import ShortVideoJob, VideoOptions

__all__ = [
    "Analysis",
    "Blueprint",
    "BlueprintBuild",
    "Estimate",
    "Generation",
    "Model",
    "Pricing",
    "ReplicationRun",
    "ShortVideoJob",
    "VideoOptions",
    "wire_of",
]
