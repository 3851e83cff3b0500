"""Accounts, API keys, the shared balance and the ledger of every charge, refund and monthly grant.

Each plan's monthly credits (3,000 Scale, 8,000 Ultra) are granted at the turn of every calendar month
of the sandbox's clock: added to the balance (the spec does not say whether unused ones lapse; here
they stay), one ledger entry (``kind: grant``) per account and month, booked as soon as anything reads a
balance or the ledger, or charges or refunds, after the clock passed the month's turn.
"""

import secrets
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from mediagen_nb.protocol import limits, messages
from mediagen_nb.runtime.clock import SimulatedClock
from mediagen_nb.sandbox.responses import ServiceError, bad_request
from mediagen_nb.sandbox.saved import Row, Rows

DEMO_ACCOUNT = "demo"
DEMO_KEY = "pk_live_sandbox_demo_key"  # public: a sandbox with an owner has a key of its own instead
DEMO_KEY_ID = "key_demo"
KEY_STATES = ("active", "expired", "revoked")
MAX_CREDITS = 10**12  # the largest balance or monthly cap the controls accept
GRANT = "grant"  # the ledger's kind of a month's plan credits
EXPIRIES = {"never": None, "30d": 30 * 86400, "90d": 90 * 86400, "1y": 365 * 86400}


def _credits(value: Any) -> bool:
    """A whole number of credits the controls accept."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_CREDITS


@dataclass
class Account:
    id: str
    plan: str = "scale"
    balance: int = limits.PLAN_CREDITS["scale"]
    suspended: bool = False
    granted_month: str = ""  # the last calendar month (YYYY-MM) whose plan credits were granted

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "plan": self.plan,
            "balance": self.balance,
            "suspended": self.suspended,
            "grantedMonth": self.granted_month,
        }

    to_dict = public  # the saved state holds exactly what the control shows

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Account":
        # A state saved before grants were kept has no month: the next look starts counting from then.
        return cls(data["id"], data["plan"], data["balance"], data["suspended"], data.get("grantedMonth", ""))


@dataclass
class ApiKey:
    id: str
    secret: str = field(repr=False)
    account: str
    name: str | None = None
    monthly_cap: int | None = None
    state: str = "active"
    created_at: float = 0.0
    expires_at: float | None = None
    spent: Counter[str] = field(default_factory=Counter)  # credits by calendar month, net of refunds

    def public(self, clock: SimulatedClock, *, reveal: bool = False) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "account": self.account,
            "name": self.name,
            "monthlyCap": self.monthly_cap,
            "state": self.state,
            "createdAt": clock.iso(self.created_at),
            "expiresAt": clock.iso(self.expires_at) if self.expires_at is not None else None,
            "spentThisMonth": self.spent[clock.month()],
        }
        if reveal:
            body["key"] = self.secret
        return body

    def to_dict(self) -> dict[str, Any]:
        """The key as saved state (``state.py``), its secret included: that state is the sandbox's own."""
        return {
            "id": self.id,
            "secret": self.secret,
            "account": self.account,
            "name": self.name,
            "monthlyCap": self.monthly_cap,
            "state": self.state,
            "createdAt": self.created_at,
            "expiresAt": self.expires_at,
            "spent": dict(self.spent),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ApiKey":
        return cls(
            data["id"],
            data["secret"],
            data["account"],
            data["name"],
            data["monthlyCap"],
            data["state"],
            data["createdAt"],
            data["expiresAt"],
            Counter(data["spent"]),
        )


# Where a start came from: the REST API, the agent (MCP) server's tools, or the web app (a control
# records its runs), or the plan's monthly credits; the ledger says it of every entry, and
# ``check_usage`` counts by it.
VIA_API, VIA_AGENT, VIA_APP, VIA_PLAN = "api", "agent", "app", "plan"


@dataclass(frozen=True)
class Caller:
    """Who made an authenticated request: an API key, or an agent client's OAuth access token (its id;
    ``key`` is None), or, for runs a control records, the web app (neither)."""

    account: Account
    key: ApiKey | None
    token: str | None = None
    via: str = VIA_API

    @property
    def credential(self) -> str:
        """The id its request limit and charges are kept under: the key's, the token's, or the app's."""
        return self.key.id if self.key is not None else self.token or VIA_APP

    def to_dict(self) -> dict[str, str]:
        """Who, as saved state: the account and credential ids (:meth:`Accounts.caller` reads them back)."""
        ids = {"account": self.account.id, "via": self.via}
        if self.key is not None:
            ids["key"] = self.key.id
        if self.token is not None:
            ids["token"] = self.token
        return ids


class Accounts:
    """Every account and key of the sandbox, with the ledger; one instance per sandbox state."""

    def __init__(self, clock: SimulatedClock, demo_key: str = DEMO_KEY) -> None:
        self.clock = clock
        self.accounts: dict[str, Account] = {DEMO_ACCOUNT: Account(DEMO_ACCOUNT, granted_month=clock.month())}
        self.keys: dict[str, ApiKey] = {}
        self.ledger: list[dict[str, Any]] = []
        # Credits charged per (key, resource, id) by calendar month: a refund goes back to those months.
        self._charged: dict[tuple[str, str, str | None], Counter[str]] = {}
        self.unsaved = True  # an account or key changed since the state was last saved
        self._add_key(ApiKey(DEMO_KEY_ID, demo_key, DEMO_ACCOUNT, name="demo", created_at=clock.now()))

    def _add_key(self, key: ApiKey) -> ApiKey:
        self.keys[key.secret] = key
        self.unsaved = True
        return key

    def use_demo_key(self, secret: str) -> None:
        """The demo key's value is ``secret`` (a state saved with another value, the public one, is moved
        to it; the key keeps its id, so what it started and spent stays its own)."""
        for old, key in list(self.keys.items()):
            if key.id == DEMO_KEY_ID and old != secret:
                del self.keys[old]
                key.secret = secret
                self._add_key(key)

    def restore(self, accounts: list[Account], keys: list[ApiKey], ledger: list[dict[str, Any]]) -> None:
        """Take back a saved state: accounts, keys and the ledger, whose charges tell refunds their months."""
        self.accounts = {account.id: account for account in accounts}
        self.keys = {key.secret: key for key in keys}
        self.ledger = ledger
        self._charged = {}
        for entry in ledger:
            if entry["kind"] == GRANT:
                continue
            months = self._charged.setdefault(
                (entry["keyId"] or entry.get("tokenId") or VIA_APP, entry["resource"], entry["resourceId"]),
                Counter(),
            )
            if entry["kind"] == "charge":
                months[entry["at"][:7]] += entry["credits"]  # "YYYY-MM" of its simulated time
            else:
                _take_back(months, entry["credits"])
        self.unsaved = False

    def dump(self) -> Iterator[Row]:
        """Every account and key as saved rows, when one changed since the last dump (the ledger is saved
        entry by entry, from :attr:`ledger`)."""
        if self.unsaved:
            self.unsaved = False
            yield from (("account", account.id, account.to_dict()) for account in self.accounts.values())
            yield from (("key", key.id, key.to_dict()) for key in self.keys.values())

    def load(self, rows: Rows, ledger: list[dict[str, Any]]) -> None:
        """Take back the saved rows (:meth:`dump`) and the saved ledger."""
        self.restore(
            [Account.from_dict(data) for data in rows.get("account", {}).values()],
            [ApiKey.from_dict(data) for data in rows.get("key", {}).values()],
            ledger,
        )

    def caller(self, ids: dict[str, str]) -> Caller:
        """The caller a saved resource names (:meth:`Caller.to_dict`)."""
        key = next(k for k in self.keys.values() if k.id == ids["key"]) if "key" in ids else None
        return Caller(self.accounts[ids["account"]], key, ids.get("token"), ids.get("via", VIA_API))

    def account(self, account_id: str) -> Account:
        """The account (made on first use, with its plan's credits), the months' grants booked."""
        if account_id not in self.accounts:
            self.accounts[account_id] = Account(account_id, granted_month=self.clock.month())
            self.unsaved = True
        self.book_grants()
        return self.accounts[account_id]

    def entries(self) -> list[dict[str, Any]]:
        """The ledger, with the grants of every month begun booked."""
        self.book_grants()
        return self.ledger

    def book_grants(self) -> None:
        """Book the plan's monthly credits of every account for each calendar month begun since its last
        grant, month by month across the accounts, dated the first of the month.

        Called by every read of a balance or of the ledger and before every charge and refund, so the
        grant is there the moment the clock has passed the month's turn, however the clock moved (a
        jump, a manual advance, scaled time) and whichever account is looked at first; the ledger's
        order stays the clock's.
        """
        now = self.clock.month()
        for account in self.accounts.values():
            if not account.granted_month:  # a state saved before grants were kept: counting starts now
                account.granted_month = now
                self.unsaved = True
        while True:
            behind = [account for account in self.accounts.values() if account.granted_month < now]
            if not behind:
                return
            month = min(_next_month(account.granted_month) for account in behind)
            for account in behind:
                if _next_month(account.granted_month) == month:
                    self._grant(account, month)

    def _grant(self, account: Account, month: str) -> None:
        account.granted_month = month
        self.unsaved = True
        credits = limits.PLAN_CREDITS.get(account.plan, 0)  # plans without API access: none here
        if credits:
            account.balance += credits
            year, number = (int(part) for part in month.split("-"))
            start = datetime(year, number, 1, tzinfo=timezone.utc).timestamp()
            self._record(GRANT, Caller(account, None, via=VIA_PLAN), credits, "plan", month, at=start)

    def create_key(self, body: dict[str, Any]) -> ApiKey:
        """``POST /_sandbox/keys``: like the developer page's New key, plus a state for tests."""
        name, cap, state = body.get("name"), body.get("monthlyCap"), body.get("state", "active")
        expires, account_id = body.get("expires", "never"), body.get("account", DEMO_ACCOUNT)
        if name is not None and not isinstance(name, str):
            raise bad_request("name must be a string")
        if cap is not None and not _credits(cap):
            raise bad_request(f"monthlyCap must be a whole number of credits from 0 to {MAX_CREDITS}")
        if not isinstance(state, str) or state not in KEY_STATES:
            raise bad_request(f"state must be one of: {', '.join(KEY_STATES)}")
        if not isinstance(expires, str) or expires not in EXPIRIES:
            raise bad_request(f"expires must be one of: {', '.join(EXPIRIES)}")
        if not isinstance(account_id, str) or not account_id:
            raise bad_request("account must be a non-empty string")
        account = self.account(account_id)
        if account.plan not in limits.API_PLANS:
            raise ServiceError(403, messages.PLAN_WITHOUT_API)
        now = self.clock.now()
        lifetime = EXPIRIES[expires]
        key = ApiKey(
            id=f"key_{secrets.token_hex(6)}",
            secret=f"pk_live_{secrets.token_urlsafe(24)}",
            account=account.id,
            name=name,
            monthly_cap=cap,
            state=state,
            created_at=now,
            expires_at=now + lifetime if lifetime is not None else None,
        )
        return self._add_key(key)

    def update_account(self, body: dict[str, Any]) -> Account:
        """``POST /_sandbox/account``: set balance, plan or suspension."""
        account_id = body.get("account", DEMO_ACCOUNT)
        if not isinstance(account_id, str) or not account_id:
            raise bad_request("account must be a non-empty string")
        balance, plan, suspended = body.get("balance"), body.get("plan"), body.get("suspended")
        if balance is not None and not _credits(balance):
            raise bad_request(f"balance must be a whole number of credits from 0 to {MAX_CREDITS}")
        if plan is not None and not isinstance(plan, str):
            raise bad_request("plan must be a string such as scale, ultra or free")
        if suspended is not None and not isinstance(suspended, bool):
            raise bad_request("suspended must be true or false")
        account = self.account(account_id)
        self.unsaved = True
        if balance is not None:
            account.balance = balance
        if plan is not None:
            account.plan = plan
        if suspended is not None:
            account.suspended = suspended
        return account

    def authenticate(self, authorization: str | None, via: str = VIA_API) -> Caller:
        """The key checks of start check 1 (the rate limit is the caller's next step)."""
        key = self.keys.get(bearer(authorization))
        if (
            key is None
            or key.state != "active"
            or (key.expires_at is not None and key.expires_at <= self.clock.now())
        ):
            raise ServiceError(401, messages.INVALID_KEY)
        return Caller(self.active(key.account), key, via=via)

    def active(self, account_id: str) -> Account:
        """The account a credential belongs to; 403 when it is suspended."""
        account = self.account(account_id)
        if account.suspended:
            raise ServiceError(403, messages.SUSPENDED)
        return account

    def cap_allows(self, caller: Caller, credits: int) -> bool:
        """Whether the caller's key cap allows ``credits`` more this month (an access token has none)."""
        key = caller.key
        return (
            key is None
            or key.monthly_cap is None
            or key.spent[self.clock.month()] + credits <= key.monthly_cap
        )

    def _record(
        self,
        kind: str,
        caller: Caller,
        credits: int,
        resource: str,
        resource_id: str | None,
        at: float | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        entry = {
            "seq": len(self.ledger) + 1,
            "at": self.clock.iso(at),
            "kind": kind,
            "credits": credits,
            "account": caller.account.id,
            "keyId": caller.key.id if caller.key is not None else None,
            "tokenId": caller.token,
            "via": caller.via,
            "resource": resource,
            "resourceId": resource_id,
            "balance": caller.account.balance,
            **extra,
        }
        self.ledger.append(entry)
        self.unsaved = True  # the balance, and the key's month, changed with it
        return entry

    def charge(
        self, caller: Caller, credits: int, resource: str, resource_id: str | None, **extra: Any
    ) -> dict[str, Any]:
        """Take credits from the shared balance and count them against the key's month."""
        self.book_grants()
        caller.account.balance -= credits
        if caller.key is not None:
            caller.key.spent[self.clock.month()] += credits
        months = self._charged.setdefault((caller.credential, resource, resource_id), Counter())
        months[self.clock.month()] += credits
        return self._record("charge", caller, credits, resource, resource_id, **extra)

    def refund(
        self, caller: Caller, credits: int, resource: str, resource_id: str | None, **extra: Any
    ) -> dict[str, Any]:
        """Give credits back to the balance and to the key's months they were charged in (latest first)."""
        self.book_grants()
        caller.account.balance += credits
        charged = self._charged.get((caller.credential, resource, resource_id), Counter())
        taken = _take_back(charged, credits)
        if caller.key is not None:
            for month, take in taken.items():
                caller.key.spent[month] -= take
            caller.key.spent[self.clock.month()] -= credits - sum(taken.values())
        return self._record("refund", caller, credits, resource, resource_id, **extra)


def _next_month(month: str) -> str:
    """``"2026-12"`` -> ``"2027-01"``."""
    year, number = (int(part) for part in month.split("-"))
    return f"{year + number // 12:04d}-{number % 12 + 1:02d}"


def bearer(authorization: str | None) -> str:
    """The credential of an ``Authorization: Bearer ...`` header; the spec's 401 when there is none."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ServiceError(401, messages.MISSING_CREDENTIALS)
    return token.strip()


def _take_back(charged: Counter[str], credits: int) -> Counter[str]:
    """Take ``credits`` back from the months they were charged in, latest first; what each month gave."""
    taken: Counter[str] = Counter()
    left = credits
    for month in sorted(charged, reverse=True):
        take = min(left, charged[month])
        charged[month] -= take
        taken[month] += take
        left -= take
    return taken
