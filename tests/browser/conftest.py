"""The browser harness's fixtures (Debian's chromium, Playwright, ``test-artifacts/``) for every module here.

They are defined with the rest of the harness in ``test_quickstart_browser.py``.
"""

from test_quickstart_browser import artifacts, browser, chromium  # noqa: F401
