"""The generation API (``/v3/playground/v1``): runs, their reads with ``wait``, and estimates.

* ``backend.py``: the backend, the spec's ten start checks in order and the run's life (to change a check).
* ``handlers.py``: the endpoints, the only code here that reads requests.
* ``outputs.py``: what a finished run makes (image and video sizes, the media files).

Prices are in the catalog data (``sandbox/catalog/``), messages in ``protocol/messages.py``, and what every
paid start shares (idempotency, cap, balance, refunds, time limits) in ``sandbox/lifecycle.py``.
"""
