"""The replication API (``/v3/replicate/v1``): a short video becomes a blueprint, then a replica.

* ``backend.py``: the backend, analyses and runs, their start checks and timing (to change a rule);
  ``resources.py``: the Analysis and Run resources and the replicate body's field rules.
* ``handlers.py``: the endpoints, the only code here that reads requests.
* ``links.py``: which analyze links are accepted; ``blueprint.py`` and ``words.toml``: how a blueprint
  is written; ``takes.py``: how clips pack into takes and what a take costs.

Replication model prices are in the catalog data (``sandbox/catalog/``), messages in
``protocol/messages.py``, and what every paid start shares in ``sandbox/lifecycle.py``.
"""
