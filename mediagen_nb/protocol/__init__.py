"""The service's own rules, written once: paths, limits, messages, status words and unshown field names.

Both the client and the sandbox read these modules, so a correction to the spec is one line here:
``paths.py`` (every path, the sandbox's controls too), ``limits.py`` (the Limits table), ``messages.py``
(every error message), ``states.py`` (every status), ``wire.py`` (field names the spec does not show),
``schema.py`` (an input checked against a model's ``input_schema``); and ``environment.py``, the
variables that point a client at a service (the toolkit's names, which the sandbox gives out). Rules
only, no machinery: what both sides share at run time (time, TLS) is in ``mediagen_nb/runtime``, and
media formats by their bytes and extensions in ``mediagen_nb/media_formats.py``.
"""
