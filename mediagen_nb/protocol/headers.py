"""What an HTTP header can carry, the rule of the Idempotency-Key at every door: the REST header, the
topic-to-video body's key and the agent server's ``idempotencyKey`` (the sandbox refuses with it), and
the client before it sends one.

A header value is printable ASCII (space to ``~``): no line break (it would end the header, or smuggle
another), no control character, nothing outside ASCII (HTTP gives such bytes no meaning, and servers
read them differently).
"""


def problem(value: str) -> str | None:
    """Why an HTTP header cannot carry ``value`` (``a line break at position 3``), or None."""
    for position, char in enumerate(value):
        if not (" " <= char <= "~"):
            kind = "a line break" if char in "\r\n" else "a control character" if char.isascii() else None
            return f"{kind or f'the non-ASCII character {char!r}'} at position {position}"
    return None
