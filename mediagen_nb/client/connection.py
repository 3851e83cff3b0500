"""The process's one connection: the client every magic, form, sweep and CLI command uses.

It follows the environment (``MEDIAGEN_API_KEY`` / ``MEDIAGEN_BASE_URL``, else the embedded
sandbox) until :func:`use` says otherwise. ``mediagen_nb.use(...)``, ``%mediagen use`` and
``%mediagen key`` switch every layer at once, so a sweep never runs on a service the notebook
has left. The assembler keeps it (:mod:`mediagen_nb.client.assemble`); these are its names.
"""

from mediagen_nb.client.assemble import SANDBOX, SERVICE, async_current, current, use

__all__ = ["SANDBOX", "SERVICE", "async_current", "current", "use"]
