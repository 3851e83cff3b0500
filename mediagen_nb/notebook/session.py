"""The notebook's connection and history: one client for magics, forms and the catalog browser.

It follows the environment (``MEDIAGEN_API_KEY`` / ``MEDIAGEN_BASE_URL``, else the embedded
sandbox) until ``%mediagen use`` or ``%mediagen key`` says otherwise. A key typed with getpass
lives only inside the client's Secret: never in the user namespace, never printed.
"""

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mediagen_nb.client import Client, Generation


class Session:
    """The current client (created on first use) and this kernel's results."""

    def __init__(self) -> None:
        self._client: Client | None = None
        self._lock = threading.Lock()
        self.history: list[Any] = []

    @property
    def client(self) -> "Client":
        with self._lock:
            if self._client is None:
                from mediagen_nb.client import Client

                self._client = Client()
            return self._client

    def use(self, client: "Client") -> "Client":
        """Make ``client`` the one every magic and form uses."""
        with self._lock:
            old, self._client = self._client, client
        if old is not None and old is not client:
            old.close()
        return client

    def use_sandbox(self) -> "Client":
        from mediagen_nb.client import Client

        return self.use(Client(sandbox=True))

    def use_service(self, api_key: str | None = None, base_url: str | None = None) -> "Client":
        """The service from the environment (or the key and address given)."""
        from mediagen_nb.client import Client

        return self.use(Client(api_key, base_url=base_url))

    def remember(self, item: "Generation | Any") -> None:
        self.history.append(item)


SESSION = Session()
