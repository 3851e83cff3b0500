"""The service's own rules, written once: paths, limits, messages and unshown field names.

Both the client and the sandbox read these modules, so a correction to the spec is one line here.
"""
