"""One TLS context for every HTTP client of this process, the client's and the sandbox's.

Building a context loads the CA bundle, about 30 ms of CPU; httpx does it again for each client it
makes unless handed one, and one context may be shared by clients and threads (httpx's advice). Made
on first use from the bundle httpx would load: ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` (OpenSSL's own
variables), else certifi's.
"""

import functools
import os
import ssl


@functools.cache
def context() -> ssl.SSLContext:
    """The process's TLS context, verifying certificates."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())
