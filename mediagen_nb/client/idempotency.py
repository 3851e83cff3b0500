"""Idempotency-Keys derived from what is asked, so asking again never pays again.

A key depends on what a start asks for: its kind, its scope, the model, the input (after
validation and defaults; a local file by its content, never by the URL it was uploaded to) and,
for a sweep row, the run name and the row's occurrence among identical rows. It never depends on
which API key sends it or how the host is spelt: the service keeps keys per account, so a new key
of the same account, a pool of keys, or ``localhost`` for ``127.0.0.1`` find the same generation.

Scopes, chosen here once:

* ``single``: a one-off start from a magic, a form, the CLI, or ``Client(...)`` with ``reuse=True``.
  The same model and input in the same account reuse one generation from any of those paths;
  ``fresh=True`` (``--fresh``) asks for the next *variation*, a new key.
* ``sweep``: a row of ``df.mediagen.run`` or ``mediagen sweep``. Identical rows are told apart by
  their occurrence, and ``run_name`` starts a new set of generations for the same frame.
"""

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from mediagen_nb.client import uploads

SINGLE, SWEEP = "single", "sweep"
PREFIX = "mgnb-"  # every derived key starts so, to tell them from keys a user passes
_VERSION = 2  # changes only if the derivation must change: old keys then simply miss


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def ask(kind: str, model_id: str | None, input: Mapping[str, Any]) -> str:
    """The digest of what is asked (without scope or variation): the ledger finds variations by it."""
    return hashlib.sha256(_canon([_VERSION, kind, model_id, uploads.stable(input)]).encode()).hexdigest()[:32]


def derive(
    kind: str,
    scope: str,
    model_id: str | None,
    input: Mapping[str, Any],
    *,
    run_name: str = "",
    occurrence: int = 1,
) -> str:
    """The Idempotency-Key of a start (well under the 255 characters that count)."""
    canon = _canon([_VERSION, kind, scope, model_id, uploads.stable(input), run_name, occurrence])
    return PREFIX + hashlib.sha256(canon.encode()).hexdigest()[:40]
