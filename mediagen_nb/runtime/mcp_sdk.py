"""The MCP SDK's import in a process that runs only our code, without a grammar nothing there uses.

The SDK imports jsonschema, which builds rfc3987_syntax's 38 Earley parsers at import for its optional
"iri" format checks: 2.5 s of CPU (python-jsonschema/jsonschema#1428). Neither the SDK's client nor its
server checks formats, so a process of our own (the kept sandbox, ``mediagen sandbox``, ``mediagen
balance``) marks that module as not installed before the SDK loads, which jsonschema handles by design.
Never done where other code runs (a kernel, a test worker, an in-process sandbox): the checks stay there.
"""

import sys

IRI_GRAMMAR = "rfc3987_syntax"  # jsonschema's optional grammar for the "iri" formats


def own_process() -> None:
    """Called first by a process of our own: jsonschema, once the SDK loads it, goes without "iri" checks."""
    if IRI_GRAMMAR not in sys.modules:
        sys.modules[IRI_GRAMMAR] = None  # type: ignore[assignment]  # None: "not installed" to import
