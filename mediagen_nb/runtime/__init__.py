"""What the client and the sandbox share at run time without being a rule of the service.

``clock.py`` (time as a dependency: the wall clock, and the scaled and manual clocks of the sandbox),
``tls.py`` (the one TLS context of the process) and ``mcp_sdk.py`` (the MCP SDK's import in a process of
our own). Beneath every layer: it imports nothing else of the package, and ``protocol/`` none of it.
"""
