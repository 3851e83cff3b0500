"""The topic-to-video API (``/v3/mascot/api``): one request becomes an edited short video.

* ``backend.py``: the backend, jobs and re-edits, their start checks and step-by-step charging.
* ``handlers.py``: the endpoints, the only code here that reads requests.
* ``options.py``: voices, looks, edit styles and the start body's rules; ``steps.py``: each step's
  stage, price and time (to change a price); ``script.py`` and ``words.toml``: how a script is written.

Messages are in ``protocol/messages.py``, unshown field names in ``protocol/wire.py``, and what every
paid start shares in ``sandbox/lifecycle.py``.
"""
