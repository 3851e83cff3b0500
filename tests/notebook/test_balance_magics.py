"""``%mediagen balance`` and ``%mediagen budget balance`` in a notebook: the account's figures from the
sandbox's agent server (``check_usage``), shown beside the ledger, and a session budget of what is left."""

from _shell import Notebook, assert_short

from mediagen_nb.client.balance import Balance


def test_balance_magic_shows_the_account_to_the_credit(nb: Notebook) -> None:
    nb.ok("%%generate gpt-image-2 --quality low -o fox\na fox")  # this kernel: 3 credits, one run
    nb.post("sandbox_app_runs", {"credits": 10})  # the web app: 10 more on the same account
    shown = nb.ok("%mediagen balance")
    assert isinstance(shown, Balance)
    assert shown.remaining == nb.balance() == 3000 - 13
    assert (shown.usage.month_credits, shown.usage.month_runs, shown.usage.month_api_runs) == (13, 2, 1)
    assert (shown.other_credits, shown.other_runs) == (10, 1)
    page = shown._repr_html_()
    assert "2,987" in page and "web app" in page and "<script" not in page
    assert [e["credits"] for e in nb.charges()] == [3, 10]  # reading the balance charged nothing


def test_budget_balance_caps_the_kernel_at_what_is_left(nb: Notebook) -> None:
    nb.post("sandbox_account", {"balance": 10})
    status = nb.ok("%mediagen budget balance")
    assert (status.limit, status.left) == (10, 10)
    message = nb.usage_error("%%generate gpt-image-2 --quality high\na fox")  # 25 credits
    assert_short(message, "budget: gpt-image-2 would cost 25 credits")
    assert "session budget of 10 credits" in message
    assert nb.sent("run") == [] and nb.balance() == 10  # refused before sending
    nb.ok("%%generate gpt-image-2 --quality low\na fox")  # 3 credits: within what was left
    assert nb.ok("%mediagen budget").left == 7 and nb.balance() == 7
    assert nb.ok("%mediagen budget off").limit is None
