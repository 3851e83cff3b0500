"""The environment variables that point a client at a service, read by the client and given by the sandbox.

The spec names none of them; these are the toolkit's names, kept here so the sandbox can tell a
process how to reach it (``mediagen sandbox``, ``Sandbox.client_env()``) in the client's own words.
"""

ENV_KEY = "MEDIAGEN_API_KEY"
ENV_BASE_URL = "MEDIAGEN_BASE_URL"
ENV_TIME_SCALE = "MEDIAGEN_TIME_SCALE"  # of the sandbox at MEDIAGEN_BASE_URL, or of the embedded one
ENV_WIRE = "MEDIAGEN_WIRE"  # a names file (protocol/wire.py): how the service spells unshown names
# Names a sandbox answers to besides its own loopback address (a proxy's: ``--allow-host``), comma-separated.
ENV_SANDBOX_HOSTS = "MEDIAGEN_SANDBOX_HOSTS"
