"""The account's real balance in the toolkit: ``mg.balance()``, ``mg.budget("balance")``, the OAuth sign-in
where the agent server takes no key, ``mediagen balance`` and ``mediagen mcp-config``, on a served sandbox,
figures checked against the sandbox's own account and ledger."""

import json
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _agent import agent, balance, call, ledger, sign_in
from _shared import call_mediagen, environment

import mediagen_nb as mg
from mediagen_nb.client import connection
from mediagen_nb.client.agent import Usage
from mediagen_nb.client.balance import Balance
from mediagen_nb.client.context import PROCESS
from mediagen_nb.protocol.paths import path
from mediagen_nb.sandbox import Sandbox, SandboxConfig

RUN = {"modelId": "gpt-image-2", "input": {"prompt": "a lighthouse", "quality": "low"}}
LINK = "https://www.tiktok.com/@someone/video/7"


@pytest.fixture(autouse=True)
def no_sign_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts signed in to no agent server."""
    monkeypatch.setattr(PROCESS, "agent_tokens", {})


@pytest.fixture
def client(served: Sandbox) -> Iterator[mg.Client]:
    made = mg.Client.for_sandbox(served)
    connection.use(made)
    yield made


def test_balance_is_the_account_s_to_the_credit_and_explains_the_difference(
    served: Sandbox, client: mg.Client
) -> None:
    base = served.base_url
    assert base is not None
    client.generate("gpt-image-2", prompt="a fox", quality="low")  # this machine: 3 credits, 1 run
    assert httpx.post(base + path("sandbox_app_runs"), json={"credits": 10}).status_code == 201  # the web app
    found = mg.balance()
    assert found.remaining == balance(base) == 3000 - 13
    assert (found.usage.month_credits, found.usage.month_runs, found.usage.month_api_runs) == (13, 2, 1)
    assert (found.ledger_credits, found.ledger_runs) == (3, 1)
    assert (found.other_credits, found.other_runs) == (10, 1)
    text = str(found)
    assert "2,987 credits left" in text and "web app" in text and "1 of the month's runs" in text
    assert found.usage.top_up_url == base + path("sandbox_app", page="billing")
    assert 'href="' + base in found._repr_html_()
    assert sum(e["credits"] for e in ledger(base)) == 13  # reading the balance charged nothing


def test_the_ledger_and_the_account_agree_when_everything_was_started_here(client: mg.Client) -> None:
    client.generate("gpt-image-2", prompt="a fox", quality="low")
    found = mg.balance()
    assert (found.other_credits, found.other_runs) == (0, 0)
    assert "agree" in found.explained()[0]


@pytest.mark.anyio
async def test_agent_starts_with_a_token_count_on_the_account_but_not_as_api_runs(
    served: Sandbox, client: mg.Client
) -> None:
    base = served.base_url
    assert base is not None
    async with agent(base, sign_in(base)) as session:
        await call(session, "generate", RUN)
    found = mg.balance(client)
    assert (found.usage.month_runs, found.usage.month_api_runs, found.ledger_runs) == (1, 0, 0)
    assert found.other_credits == 3


def test_a_budget_against_the_balance_refuses_what_the_account_cannot_pay(
    served: Sandbox, client: mg.Client
) -> None:
    base = served.base_url
    assert base is not None
    httpx.post(base + path("sandbox_account"), json={"balance": 10})
    status = mg.budget("balance")
    assert status.limit == 10 and status.left == 10
    with pytest.raises(mg.BudgetExceeded, match="would cost 25 credits"):
        client.generate("gpt-image-2", prompt="a fox", quality="high")
    assert ledger(base) == []  # refused before sending
    client.generate("gpt-image-2", prompt="a fox", quality="low")
    assert mg.budget().left == 7


def test_an_agent_server_that_wants_oauth_says_so_and_the_notebook_sign_in_works() -> None:
    with Sandbox(SandboxConfig(time_scale=600, seed=1, agent_keys=False)) as sandbox:
        client = mg.Client.for_sandbox(sandbox)
        connection.use(client)
        with pytest.raises(mg.AuthenticationError, match=r"refused the API key .*sign_in\(\)"):
            mg.balance()
        shown: list[str] = []

        def paste(prompt: str) -> str:
            link = re.search(r"open (\S+) and approve", shown[0])
            assert link is not None and "code_challenge_method=S256" in link.group(1)
            page = httpx.get(link.group(1))  # the sign-in page: the user clicks Allow on it
            consent = re.search(r'name=consent value="([^"]+)"', page.text)
            assert consent is not None, page.text
            allowed = httpx.post(link.group(1).split("?")[0], data={"consent": consent.group(1)})
            code = re.search(r"<pre id=code>([^<]+)</pre>", allowed.text)
            assert code is not None
            return code.group(1)

        said = mg.sign_in(read=paste, show=shown.append)
        assert "signed in" in said and "mgat_" not in said
        token = next(iter(PROCESS.agent_tokens.values()))
        assert "mgat_" not in repr(token)
        found = mg.balance()
        assert found.remaining == 3000


def test_a_sign_in_with_a_wrong_code_is_refused_in_one_line(served: Sandbox, client: mg.Client) -> None:
    with pytest.raises(mg.AuthenticationError, match="sign-in refused"):
        mg.sign_in(read=lambda prompt: "not-a-code", show=lambda line: None)
    assert PROCESS.agent_tokens == {}


def test_on_the_service_the_agent_server_s_address_must_be_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEDIAGEN_MCP_URL", raising=False)
    client = mg.Client("pk_live_example", base_url="https://api.example.invalid")
    with pytest.raises(mg.ConfigurationError, match="MEDIAGEN_MCP_URL"):
        mg.balance(client)
    monkeypatch.setenv("MEDIAGEN_MCP_URL", "http://agents.example.invalid/mcp")
    with pytest.raises(mg.ConfigurationError, match="must be an https URL"):
        mg.balance(client)


def test_mediagen_balance_on_the_sandbox_shows_the_balance_to_the_credit(
    served: Sandbox, tmp_path: Path
) -> None:
    base = served.base_url
    assert base is not None
    env = environment(**served.client_env())
    assert (
        call_mediagen(
            "generate", "gpt-image-2", "prompt=a fox", "quality=low", env=env, cwd=tmp_path
        ).returncode
        == 0
    )
    httpx.post(base + path("sandbox_app_runs"), json={"credits": 7})
    shown = call_mediagen("balance", env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    left = balance(base)
    assert left == 3000 - 10
    assert f"{left:,} credits left" in shown.stdout
    assert "7 credits and 1 run on the account were not started from this machine's ledger" in shown.stdout
    document = json.loads(call_mediagen("balance", "--json", env=env, cwd=tmp_path).stdout)
    assert document["remainingCredits"] == left and document["ledger"] == {"credits": 3, "runs": 1}
    assert (document["monthCredits"], document["monthRuns"], document["monthApiRuns"]) == (10, 2, 1)


def test_mediagen_balance_without_an_agent_server_address_exits_2(tmp_path: Path) -> None:
    env = environment(MEDIAGEN_API_KEY="pk_live_example", MEDIAGEN_BASE_URL="https://api.example.invalid")
    done = call_mediagen("balance", "--json", env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["type"] == "ConfigurationError"
    assert "pk_live_example" not in done.stdout + done.stderr


def test_mcp_config_prints_and_writes_jupyter_ai_s_entry(served: Sandbox, tmp_path: Path) -> None:
    """A server on a loopback address may be a tunnel to the service: its key is printed masked (only the
    user's own kept sandbox, proven so, has its key printed: tests/sandbox/test_owner_processes.py)."""
    base = served.base_url
    assert base is not None
    env = environment(**served.client_env())
    printed = call_mediagen("mcp-config", env=env, cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    (shown,) = json.loads(printed.stdout)["mcp_servers"]
    assert shown["headers"] == [{"name": "Authorization", "value": "Bearer pk_live_***"}]
    assert served.demo_key not in printed.stdout + printed.stderr and "--write" in printed.stderr
    entry = {
        "type": "http",
        "name": "mediagen",
        "url": base + path("mcp"),
        "headers": [{"name": "Authorization", "value": f"Bearer {served.demo_key}"}],
    }
    assert not (tmp_path / ".jupyter").exists()  # printing writes nothing
    settings = tmp_path / ".jupyter" / "mcp_settings.json"
    settings.parent.mkdir()
    other = {"name": "Other Tools", "command": "npx", "args": []}
    settings.write_text(json.dumps({"mcp_servers": [other, {**entry, "url": "http://old"}]}))
    written = call_mediagen("mcp-config", "--write", env=env, cwd=tmp_path)
    assert written.returncode == 0 and str(settings.resolve()) in written.stdout
    assert json.loads(settings.read_text())["mcp_servers"] == [other, entry]  # merged, ours replaced
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600


@pytest.mark.anyio
async def test_the_written_entry_reaches_the_agent_server(served: Sandbox, tmp_path: Path) -> None:
    """What Jupyter AI would do with the entry: the SDK's client, with its URL and header, lists the tools."""
    env = environment(**served.client_env())
    assert call_mediagen("mcp-config", "--write", env=env, cwd=tmp_path).returncode == 0
    (entry,) = json.loads((tmp_path / ".jupyter" / "mcp_settings.json").read_text())["mcp_servers"]
    credential = entry["headers"][0]["value"].removeprefix("Bearer ")
    async with agent(entry["url"].removesuffix(path("mcp")), credential) as session:
        assert len((await session.list_tools()).tools) == 9


def test_mcp_config_masks_a_real_key_unless_written(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env = environment(
        MEDIAGEN_API_KEY="pk_live_realsecret123",
        MEDIAGEN_BASE_URL="https://api.example.invalid",
        MEDIAGEN_MCP_URL="https://agents.example.invalid/mcp",
    )
    printed = call_mediagen("mcp-config", env=env, cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert "realsecret123" not in printed.stdout + printed.stderr and "--write" in printed.stderr
    written = call_mediagen("mcp-config", "--write", env=env, cwd=tmp_path)
    assert "realsecret123" not in written.stdout + written.stderr and "keep it out of git" in written.stdout
    (entry,) = json.loads((tmp_path / ".jupyter" / "mcp_settings.json").read_text())["mcp_servers"]
    assert entry["headers"] == [{"name": "Authorization", "value": "Bearer pk_live_realsecret123"}]


def test_without_the_sdk_the_balance_names_the_extra(
    served: Sandbox, client: mg.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if the agent extra were not installed
    with pytest.raises(mg.ConfigurationError, match=r"pip install 'mediagen-nb\[agent\]'"):
        mg.balance(client)


def test_on_a_sandbox_in_another_month_the_ledger_is_not_compared(served: Sandbox, client: mg.Client) -> None:
    """The sandbox counts its month on its simulated clock; once that clock is in another month than this
    machine's, the account's month and the ledger's are told apart, not explained as each other."""
    base = served.base_url
    assert base is not None
    client.generate("gpt-image-2", prompt="a fox", quality="low")  # this machine's month: 3 credits
    httpx.post(base + path("sandbox_clock"), json={"advance": 40 * 86400})  # the sandbox: a month on
    found = mg.balance()
    sandbox_month = httpx.get(base + path("sandbox_info")).json()["data"]["now"][:7]
    assert found.account_month == sandbox_month != found.ledger_month
    assert (found.usage.month_credits, found.usage.month_runs) == (0, 0)  # its new month is empty
    assert (found.ledger_credits, found.ledger_runs) == (3, 1)
    (said,) = found.explained()
    assert f"its month is {sandbox_month}" in said and "not compared" in said
    assert f"{sandbox_month} on the account: 0 credits" in str(found)
    grants = [e["credits"] for e in ledger(base) if e["kind"] == "grant"]  # each month turned: the plan's
    assert grants and set(grants) == {3000}
    assert found.remaining == balance(base) == 3000 - 3 + sum(grants)


def test_runs_under_every_spelling_of_this_machine_s_sandbox_are_this_machine_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 39: runs started on the kept sandbox by its address (``localhost``, ``127.0.0.1``) were
    "not started from this machine's ledger" to the embedded sandbox's balance, and the other way round.
    The ledger's side is this account's starts on this sandbox, however its address was spelt."""
    monkeypatch.setenv("MEDIAGEN_TIME_SCALE", "600")
    with mg.Client(sandbox=True) as embedded:
        embedded.generate("gpt-image-2", prompt="a fox", quality="low")
        port = embedded.base_url.rsplit(":", 1)[1]
        key = embedded.settings.keys[0].reveal()
        spelt = [mg.Client(key, base_url=f"http://{host}:{port}") for host in ("localhost", "127.0.0.1")]
        for n, client in enumerate(spelt):
            client.generate("gpt-image-2", prompt=f"a fox, take {n}", quality="low")
        for client in (embedded, *spelt):
            found = mg.balance(client)
            assert (found.usage.month_credits, found.usage.month_runs) == (9, 3)
            assert (found.ledger_credits, found.ledger_runs) == (9, 3), client.base_url
            assert "agree" in found.explained()[0]
        for client in spelt:
            client.close()


@pytest.fixture
def manual() -> Iterator[Sandbox]:
    """A sandbox served on 127.0.0.1 whose clock stands still unless a client's waits move it."""
    with Sandbox(SandboxConfig(clock="manual", seed=1)) as sandbox:
        yield sandbox


NEGATIVE = re.compile(r"(?<![\w-])-\d")


def test_a_render_in_flight_is_said_apart_and_no_figure_is_negative(
    manual: Sandbox, tmp_path: Path, own_ledger: Path
) -> None:
    """Issue 39: with a replica render in flight (the ledger holds its estimate, the account what its
    clips have charged so far) the balance said "-100 credits ... were not started from this machine's
    ledger". Now the render is said to be in flight, beside figures that are all counts."""
    base = manual.base_url
    assert base is not None
    with mg.Client.for_sandbox(manual) as client:
        analysis = client.wait_analysis(client.analyze(LINK), poll=5, timeout=3 * 3600)
        run = client.replicate(analysis.id, quality="high")  # 15 clips, estimated at 300 credits
        assert run.status == "generating"
        assert httpx.post(base + path("sandbox_app_runs"), json={"credits": 7}).status_code == 201
        found = mg.balance(client)
    charged = sum(e["credits"] for e in ledger(base) if e["kind"] == "charge")
    assert found.usage.month_credits == charged and 5 + 7 < charged < 5 + 7 + 300  # clips charged so far
    assert (found.ledger_credits, found.ledger_runs) == (5, 1)  # the analysis: the render is in flight
    assert (found.in_flight_runs, found.in_flight_credits) == (1, 300)
    text = str(found)
    assert not NEGATIVE.search(text), text
    assert "in flight here: 1 run the service charges as it renders" in text and "300 credits" in text
    assert "at least 1 run was started elsewhere" in text  # the web app's, beyond the render's one run

    env = environment(
        **manual.client_env(), MEDIAGEN_LEDGER=str(own_ledger)
    )  # `mediagen balance`, same ledger
    document = json.loads(call_mediagen("balance", "--json", env=env, cwd=tmp_path).stdout)
    assert document["inFlight"] == {"running": 0, "renders": 1, "estimatedCredits": 300}
    assert not any(NEGATIVE.search(line) for line in document["explained"])


def test_figures_of_both_signs_are_each_said_as_a_count() -> None:
    """More runs on the account than in the ledger, fewer credits (a refund the ledger has not read, and
    a web-app run): each is said on its side, never as a negative figure."""
    usage = Usage(
        remaining_credits=2990, month_credits=4, month_runs=3, month_api_runs=2, top_up_url="https://x"
    )
    found = Balance(usage, "the service", "May 2026", 2, 9, 0, 0, ledger_month="2026-05")
    said = " ".join(found.explained())
    assert not NEGATIVE.search(said) and not NEGATIVE.search(str(found)), said
    assert "1 run on the account was not started from this machine's ledger" in said
    assert "this ledger holds 5 credits the account does not count" in said


def test_starts_with_another_key_are_said_apart(served: Sandbox, client: mg.Client) -> None:
    """The ledger's side is this account's starts (its keys); what the ledger holds on this service with
    another key (an earlier key of the account, or another account's) is named apart, not dropped."""
    base = served.base_url
    assert base is not None
    client.generate("gpt-image-2", prompt="a fox", quality="low")
    other = httpx.post(base + path("sandbox_keys"), json={"name": "a second key"}).json()["data"]["key"]
    with mg.Client(other, base_url=base) as second:
        second.generate("gpt-image-2", prompt="a hare", quality="low")
    found = mg.balance(client)
    assert (found.ledger_credits, found.ledger_runs) == (3, 1) and found.other_keys == (1, 3)
    assert (found.usage.month_credits, found.usage.month_runs) == (6, 2)  # the same account: both keys
    said = found.explained()
    assert any(line.startswith("not counted above: 3 credits and 1 run this ledger holds") for line in said)
