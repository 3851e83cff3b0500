"""mediagen_nb: a hosted media-generation service as a first-class citizen of Jupyter and pandas.

Everything loads on first use (the client, the sandbox server, media encoders), so
``import mediagen_nb`` stays fast.
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from mediagen_nb.batch.template import Template as Template
    from mediagen_nb.batch.template import template as template
    from mediagen_nb.batch.usage import usage as usage
    from mediagen_nb.client import *  # noqa: F403
    from mediagen_nb.notebook import catalog as catalog
    from mediagen_nb.notebook import form as form
    from mediagen_nb.notebook import load_ipython_extension as load_ipython_extension
    from mediagen_nb.sandbox import Sandbox as Sandbox
    from mediagen_nb.sandbox import SandboxConfig as SandboxConfig

_LAZY = {
    "Sandbox": "mediagen_nb.sandbox",
    "SandboxConfig": "mediagen_nb.sandbox",
    "template": "mediagen_nb.batch.template",
    "Template": "mediagen_nb.batch.template",
    "usage": "mediagen_nb.batch.usage",
    # The notebook package is light: these load IPython, widgets or the client only when called.
    "load_ipython_extension": "mediagen_nb.notebook",
    "form": "mediagen_nb.notebook",
    "catalog": "mediagen_nb.notebook",
}

__all__ = [*_LAZY, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if not name.startswith("_"):  # the client's public names (Client, Generation, errors, ...)
        client = importlib.import_module("mediagen_nb.client")
        if name in client.__all__:
            return getattr(client, name)
    raise AttributeError(f"module 'mediagen_nb' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*__all__, *importlib.import_module("mediagen_nb.client").__all__})


def _register_accessor() -> None:
    importlib.import_module("mediagen_nb.batch.accessor")


class _AfterPandas(importlib.abc.MetaPathFinder):
    """Registers ``df.mediagen`` right after pandas is imported, so importing us never imports pandas."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != "pandas":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        if loader is None:
            return spec
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            _register_accessor()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if "pandas" in sys.modules:
    _register_accessor()
else:
    sys.meta_path.insert(0, _AfterPandas())
