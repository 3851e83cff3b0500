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

from mediagen_nb._version import __version__ as __version__

if TYPE_CHECKING:
    from mediagen_nb.batch.samples import sample_file as sample_file
    from mediagen_nb.batch.samples import sample_prompts as sample_prompts
    from mediagen_nb.batch.template import Template as Template
    from mediagen_nb.batch.template import template as template
    from mediagen_nb.batch.usage import usage as usage
    from mediagen_nb.client import *  # noqa: F403
    from mediagen_nb.client.balance import Balance as Balance
    from mediagen_nb.client.balance import balance as balance
    from mediagen_nb.client.previews import preview_mode as preview_mode
    from mediagen_nb.client.signin import sign_in as sign_in
    from mediagen_nb.client.uploads import uploads as uploads
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
    "sample_prompts": "mediagen_nb.batch.samples",
    "sample_file": "mediagen_nb.batch.samples",
    "uploads": "mediagen_nb.client.uploads",
    # The account's balance from the agent server's check_usage (the MCP SDK loads only when called).
    "balance": "mediagen_nb.client.balance",
    "Balance": "mediagen_nb.client.balance",
    "sign_in": "mediagen_nb.client.signin",
    "preview_mode": "mediagen_nb.client.previews",
    # The notebook package is light: these load IPython, widgets or the client only when called.
    "load_ipython_extension": "mediagen_nb.notebook",
    "form": "mediagen_nb.notebook",
    "catalog": "mediagen_nb.notebook",
}


# The engine adapters, as ``mediagen_nb.ray`` and ``mediagen_nb.daft`` after ``import mediagen_nb``; each
# loads its engine (the [ray] and [daft] extras), so they stay out of ``__all__`` and a star import.
ENGINES = ("ray", "daft")


def __getattr__(name: str) -> Any:
    if name in ENGINES:
        return importlib.import_module(f"{__name__}.{name}")
    if name == "__all__":  # the flat public API, read lazily so that ``import mediagen_nb`` stays light
        return sorted({*_LAZY, "__version__", *importlib.import_module("mediagen_nb.client").__all__})
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    # The client's public names (Client, Generation, errors, ...). A submodule's name is not one: asked
    # by ``from mediagen_nb import agent_cli`` before the submodule loads, it must not load the client.
    # Once the client is loaded its names are looked up at once (``mg.Client`` pays no file lookup).
    if not name.startswith("_"):
        client = sys.modules.get("mediagen_nb.client")
        if client is None and importlib.util.find_spec(f"{__name__}.{name}") is None:
            client = importlib.import_module("mediagen_nb.client")
        if client is not None and name in client.__all__:
            return getattr(client, name)
    raise AttributeError(f"module 'mediagen_nb' has no attribute {name!r}")


def __dir__() -> list[str]:
    public: list[str] = __getattr__("__all__")
    return public


# The ``.mediagen`` namespace of each frame library, registered right after the library is imported, so
# importing mediagen_nb never imports pandas or polars (the only thing this package does on import).
ACCESSORS = {"pandas": "mediagen_nb.batch.accessor", "polars": "mediagen_nb.batch.polars_accessor"}
# The same way, the layers above hand the ones below what they provide: the client's assembler gets the
# embedded sandbox's launcher (the client imports no sandbox), the batch layer the notebook's display hook.
ACCESSORS["mediagen_nb.client.assemble"] = "mediagen_nb.launcher"
ACCESSORS["mediagen_nb.batch.routing"] = "mediagen_nb.notebook.display"


class _ThenRegister(importlib.abc.Loader):
    """Loads a frame library with its own loader, then registers our accessor on it."""

    def __init__(self, loader: importlib.abc.Loader, name: str, finder: "_AfterImport") -> None:
        self.loader, self.name, self.finder = loader, name, finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        importlib.import_module(self.finder.done(self.name))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds pandas or polars the usual way and hands them to :class:`_ThenRegister`.

    A lookup alone (``importlib.util.find_spec("pandas")``, as polars does) registers nothing: only
    loading the library does.
    """

    def __init__(self, pending: dict[str, str]) -> None:
        self.pending = pending

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name not in self.pending:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _ThenRegister(spec.loader, name, self)
        return spec

    def done(self, name: str) -> str:
        """``name`` is loaded: stop watching it (and stop watching at all when none is left)."""
        accessor = self.pending.pop(name)
        if not self.pending and self in sys.meta_path:
            sys.meta_path.remove(self)
        return accessor


_pending = {name: accessor for name, accessor in ACCESSORS.items() if name not in sys.modules}
for _library, _accessor in ACCESSORS.items():
    if _library in sys.modules:
        importlib.import_module(_accessor)
if _pending:
    sys.meta_path.insert(0, _AfterImport(_pending))
