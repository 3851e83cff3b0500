"""The notebook layer's display hook for the batch layer: the running shell and IPython's display calls.

The batch layer never looks IPython up; this module registers itself with it
(:func:`mediagen_nb.batch.routing.register`) at ``%load_ext mediagen_nb``, when the notebook layer is
imported, and when ``import mediagen_nb`` sees the batch layer's routing load (so a sweep started
without the extension still shows its summary in a kernel). IPython is read from ``sys.modules``
here: a shell that runs has loaded it, and a plain process never pays for importing it.
"""

import sys
from typing import Any

from mediagen_nb.batch import routing


class IPythonDisplay:
    """:class:`mediagen_nb.batch.routing.Display` over the IPython this process runs, if any."""

    def shell(self) -> Any:
        ipython = sys.modules.get("IPython")
        return ipython.get_ipython() if ipython is not None else None

    def display(self, item: Any, **options: Any) -> None:
        sys.modules["IPython.display"].display(item, **options)

    def update_display(self, bundle: dict[str, str], *, display_id: str) -> None:
        sys.modules["IPython.display"].update_display(bundle, raw=True, display_id=display_id)


def register() -> None:
    """Hand the batch layer this process's display hook."""
    routing.register(IPythonDisplay())


register()
