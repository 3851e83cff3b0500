"""The kernel's history of results; the connection itself is the process's one (``mediagen_nb.current``).

Magics, forms and the catalog browser read ``SESSION.client``, which is always
:func:`mediagen_nb.client.connection.current`, so ``%mediagen use`` / ``%mediagen key`` and
``mediagen_nb.use(...)`` switch them together with ``df.mediagen`` and the CLI. A key typed with
getpass, or read from Colab's secrets, lives only inside the client's Secret: never in the user
namespace, never printed.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mediagen_nb.client import BaseClient, Client


class Session:
    """This kernel's results, newest last, and a view of the process's current client."""

    def __init__(self) -> None:
        self.history: list[Any] = []

    @property
    def client(self) -> "Client":
        from mediagen_nb.client.connection import current

        return current()

    def use(self, client: "BaseClient | str", **options: Any) -> "Client":
        """Make ``client`` (or ``"sandbox"`` / ``"service"``) the connection of every layer."""
        from mediagen_nb.client.connection import use

        chosen = use(client, **options)
        assert chosen is not None
        return chosen

    def remember(self, item: Any) -> None:
        """Keep ``item`` in the history once (a reused result is not a new entry)."""
        if not any(getattr(old, "id", None) == getattr(item, "id", object()) for old in self.history):
            self.history.append(item)
        else:
            self.history = [item if getattr(old, "id", None) == item.id else old for old in self.history]


def colab_secret(name: str) -> str | None:
    """Colab's secret ``name`` (the key icon of its sidebar) when this kernel runs on Colab and the
    notebook was granted it; else None (then ``%mediagen key`` asks with getpass)."""
    try:
        from google.colab import userdata  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        value = userdata.get(name)
    except Exception:  # not defined, or access not granted: the user is asked instead
        return None
    return str(value).strip() or None if value else None


SESSION = Session()
