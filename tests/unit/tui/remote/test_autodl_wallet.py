"""AutoDL's wallet balance with the developer token from the laptop's 0600 config (issue 22),
against a loopback server answering the documented shape (https://www.autodl.com/docs/common_api/)."""

import os

import pytest

from tui.core.config import Config
from tui.remote import autodl_wallet

from tests.unit.remote_probe.test_provider_api import api  # noqa: F401 - the loopback server fixture

TOKEN = "autodl-dev-token-0123"
BALANCE = {"code": "Success", "data": {"assets": 12340, "accumulate": 99000, "voucher_balance": 0}, "msg": ""}
ROUTE = ("POST", "/api/v1/dev/wallet/balance")


def test_the_wallet_balance_in_yuan(api, monkeypatch):  # noqa: F811
    a = api({ROUTE: (200, BALANCE)})
    monkeypatch.setenv("GPUTUI_AUTODL_API", a.url)
    r = autodl_wallet.read_balance(TOKEN)
    assert r["ok"] and r["balance"] == 12.34 and r["currency"] == "CNY" and r["source"] == "AutoDL API"
    assert a.seen[0][2] == TOKEN  # the token in the Authorization header, as documented
    assert TOKEN not in repr(r)


@pytest.mark.parametrize("status, doc, reason", [
    (401, {"code": "AuthFailed"}, "refused (HTTP 401)"),
    (200, {"code": "InvalidToken", "msg": "token invalid", "data": None}, "token invalid"),
    (200, b"<html>", "no answer"),
])
def test_a_wallet_failure_says_why(api, monkeypatch, status, doc, reason):  # noqa: F811
    a = api({ROUTE: (status, doc)})
    monkeypatch.setenv("GPUTUI_AUTODL_API", a.url)
    r = autodl_wallet.read_balance(TOKEN)
    assert not r["ok"] and reason in r["reason"] and TOKEN not in repr(r)


def write(tmp_path, text, mode):
    p = tmp_path / "config.toml"
    p.write_text(text)
    os.chmod(p, mode)
    return Config.load(str(p))


@pytest.mark.parametrize("text, mode, token, problem", [
    ('[hosts.a]\nautodl_token = "t1"\n', 0o600, "t1", None),
    ('[providers.autodl]\ntoken = "t2"\n', 0o600, "t2", None),
    ('[providers.autodl]\ntoken = "t2"\n[hosts.a]\nautodl_token = "t1"\n', 0o600, "t1", None),  # the host's wins
    ('[hosts.a]\nautodl_token = "t1"\n', 0o644, None, "chmod 600"),  # others can read it: not used
    ('[hosts.a]\nrate = 1\n', 0o644, None, None),
])
def test_the_token_comes_from_a_private_config(tmp_path, text, mode, token, problem):
    cfg = write(tmp_path, text, mode)
    got, said = cfg.autodl_token(cfg.host("a"))
    assert got == token
    assert (problem in said) if problem else said is None


def test_the_billing_clock_counts_the_wallet_down_at_the_typed_rate(api, monkeypatch, tmp_path):  # noqa: F811
    from tui.core.billing.clock import BillingClock
    a = api({ROUTE: (200, BALANCE)})
    monkeypatch.setenv("GPUTUI_AUTODL_API", a.url)
    cfg = write(tmp_path, '[hosts.a]\nrate = 2.0\nautodl_token = "%s"\n' % TOKEN, 0o600)
    price = autodl_wallet.price_with_wallet(None, cfg, cfg.host("a"))
    clock = BillingClock("a", cfg.host("a"), None)
    clock.on_inventory({"host": {"provider": {"hostname": "autodl-container-1"}}, "gpus": []})
    clock.set_provider_price(price)
    f = clock.figures()
    assert f.rate == 2.0 and f.rate_label == "typed rate" and f.currency == "CNY"
    out = f.balance_runs_out
    assert out is not None and out["balance"] == 12.34 and "AutoDL shuts the instance down" in out["then"]
    assert abs(out["at"] - (price["read_at"] + 12.34 / 2.0 * 3600)) < 1
