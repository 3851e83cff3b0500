"""One TLS context for every HTTP client of this process, the client's and the sandbox's.

Building a context loads the CA bundle, about 30 ms of CPU; httpx does it again for each client it
makes unless handed one, and one context may be shared by clients and threads (httpx's advice). Made
on first use from the bundle httpx would load: ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` (OpenSSL's own
variables, read at each use), else certifi's.
"""

import functools
import os
import ssl


def context() -> ssl.SSLContext:
    """The process's TLS context, verifying certificates (a new one if the variables changed)."""
    return _context(os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None)


@functools.cache
def _context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    if cafile:
        return ssl.create_default_context(cafile=cafile)
    if capath:
        return ssl.create_default_context(capath=capath)
    import certifi

    return ssl.create_default_context(cafile=certifi.where())
