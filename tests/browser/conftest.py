"""The browser harness's fixtures (Debian's chromium, Playwright, a page, ``test-artifacts/``) for every
module here; they are defined with the rest of the harness in ``_harness.py``.
"""

from _harness import artifacts, browser, chromium, page  # noqa: F401
