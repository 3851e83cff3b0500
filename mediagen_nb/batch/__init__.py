"""Bulk generation on DataFrames: plan, estimate, schedule, ledger, preview (uses the client only).

``df.mediagen`` is registered by ``import mediagen_nb`` as soon as pandas is imported; the names
below load on first use, so importing this package does not import pandas.
"""

import importlib
from typing import Any

_LAZY = {
    "EstimateSummary": "runner",
    "SweepHandle": "runner",
    "estimate": "runner",
    "run": "runner",
    "submit": "runner",
    "Gallery": "gallery",
    "usage": "usage",
    "MappingError": "plan",
    "NotSent": "plan",
    "Template": "template",
    "sample_file": "samples",
    "sample_prompts": "samples",
    "template": "template",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"mediagen_nb.batch.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'mediagen_nb.batch' has no attribute {name!r}")
