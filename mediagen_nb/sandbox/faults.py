"""Seeded, reproducible fault injection: HTTP faults per endpoint and model outcomes per generation.

HTTP kinds: ``429`` (a rate-limit refusal), ``500``, ``503`` (on a start: charged, then refunded in the
same request, as the spec describes), ``slow`` (the response is delayed ``slowSeconds`` real seconds on a
scaled clock, simulated ones on a manual clock), ``drop`` (the request is
processed and the connection is closed before the response is complete). Model kinds: ``fail`` (the
generation fails and is refunded) and ``hang`` (it never finishes and meets the time limit).
Scripts are consumed in order before rates are rolled; ``ok`` in a script means "no fault this time".
"""

import random
from collections import Counter, deque
from typing import Any

from mediagen_nb.protocol.paths import PATHS
from mediagen_nb.sandbox.responses import bad_request

HTTP_KINDS = ("429", "500", "503", "drop", "slow")
MODEL_KINDS = ("fail", "hang")
OK = "ok"
# Endpoint names a plan's ``routes`` may list: the service's paths (protocol.paths), not the controls.
ROUTE_NAMES = frozenset(name for name in PATHS if not name.startswith("sandbox_"))


class Faults:
    """The fault plan in force, drawn from one seeded generator so a run can be replayed."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.configure({})

    def configure(self, body: dict[str, Any]) -> dict[str, Any]:
        """Replace the plan from a ``POST /_sandbox/faults`` body; every field is checked and named."""
        rates = body.get("rates", {})
        if not isinstance(rates, dict):
            raise bad_request("rates must be an object of fault kind to probability")
        for kind, rate in rates.items():
            if kind not in HTTP_KINDS + MODEL_KINDS:
                raise bad_request(
                    f"rates.{kind}: unknown fault kind; use one of {', '.join(HTTP_KINDS + MODEL_KINDS)}"
                )
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
                raise bad_request(f"rates.{kind} must be a number from 0 to 1")
        if sum(rates.get(k, 0) for k in HTTP_KINDS) > 1 or sum(rates.get(k, 0) for k in MODEL_KINDS) > 1:
            raise bad_request("rates: the HTTP kinds, and the model kinds, must each add up to at most 1")
        script = self._list(body, "script", HTTP_KINDS)
        model_script = self._list(body, "modelScript", MODEL_KINDS)
        routes = body.get("routes")
        if routes is not None and not (isinstance(routes, list) and all(isinstance(r, str) for r in routes)):
            raise bad_request("routes must be a list of endpoint names such as run, generation, estimate")
        unknown = sorted(set(routes or ()) - ROUTE_NAMES)
        if unknown:
            names = ", ".join(sorted(ROUTE_NAMES))
            raise bad_request(f"routes: unknown endpoint name '{unknown[0]}'; use one of {names}")
        slow = body.get("slowSeconds", 2.0)
        if isinstance(slow, bool) or not isinstance(slow, (int, float)) or not 0 <= slow <= 60:
            raise bad_request("slowSeconds must be a number of real seconds from 0 to 60")
        seed = body.get("seed", self.seed)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise bad_request("seed must be an integer")
        self.rates: dict[str, float] = {k: float(v) for k, v in rates.items()}
        self.script: deque[str] = deque(script)
        self.model_script: deque[str] = deque(model_script)
        self.routes: frozenset[str] | None = frozenset(routes) if routes is not None else None
        self.slow_seconds = float(slow)
        self.plan_seed = seed
        self.rng = random.Random(seed)
        self.injected: Counter[str] = Counter()
        return self.describe()

    def to_dict(self) -> dict[str, Any]:
        """The plan as saved state; the generator's position only while a rate can use it."""
        return {
            **self.describe(),
            "seed": self.plan_seed,
            "rng": self.rng.getstate() if any(self.rates.values()) else None,
        }

    def restore(self, saved: dict[str, Any]) -> None:
        """Take back a saved plan, where its scripts and its generator stood."""
        names = ("rates", "script", "modelScript", "routes", "slowSeconds", "seed")
        self.configure({name: saved[name] for name in names})
        self.injected = Counter(saved["injected"])
        if saved["rng"] is not None:
            version, internal, gauss = saved["rng"]
            self.rng.setstate((version, tuple(internal), gauss))

    @staticmethod
    def _list(body: dict[str, Any], field: str, kinds: tuple[str, ...]) -> list[str]:
        items = body.get(field, [])
        allowed = (*kinds, OK)
        if not isinstance(items, list) or not all(item in allowed for item in items):
            raise bad_request(f"{field} must be a list of: {', '.join(allowed)}")
        return items

    def _roll(self, kinds: tuple[str, ...]) -> str | None:
        roll = self.rng.random()
        for kind in kinds:
            roll -= self.rates.get(kind, 0.0)
            if roll < 0:
                return kind
        return None

    def draw(self, route: str) -> str | None:
        """The HTTP fault for this request to endpoint ``route``, or None."""
        if self.routes is not None and route not in self.routes:
            return None
        kind = self.script.popleft() if self.script else self._roll(HTTP_KINDS)
        if kind is None or kind == OK:
            return None
        self.injected[kind] += 1
        return kind

    def model_outcome(self) -> str | None:
        """``fail``, ``hang`` or None for a new generation (or clip, or job step)."""
        kind = self.model_script.popleft() if self.model_script else self._roll(MODEL_KINDS)
        if kind is None or kind == OK:
            return None
        self.injected[kind] += 1
        return kind

    def describe(self) -> dict[str, Any]:
        return {
            "rates": self.rates,
            "script": list(self.script),
            "modelScript": list(self.model_script),
            "routes": sorted(self.routes) if self.routes is not None else None,
            "slowSeconds": self.slow_seconds,
            "injected": dict(self.injected),
        }
