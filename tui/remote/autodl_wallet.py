"""AutoDL's wallet balance, read from the laptop with the user's developer token (issue 22).

The token is the user's (控制台 -> 设置 -> 开发者Token) and lives in the laptop's 0600 config; unlike
RunPod's and Vast's keys it is not on the box, so this call is made here and the token is never sent
to the box. API (https://www.autodl.com/docs/common_api/): POST https://api.autodl.com/api/v1/dev/wallet/balance,
header "Authorization: <token>", answer {"code": "Success", "data": {"assets": <int, 1/1000 yuan>, ...}}.
The base URL is overridable for tests: GPUTUI_AUTODL_API.
"""

import json
import os
import socket
import time
import urllib.error
import urllib.request
from typing import Any, Dict, Optional

AUTODL_API = "https://api.autodl.com"
TIMEOUT = 4.0


def read_balance(token: str, timeout: float = TIMEOUT) -> Dict[str, Any]:
    """{"ok", "balance" (yuan), "currency": "CNY", "source": "AutoDL API", "reason"}; never the token."""
    base = (os.environ.get("GPUTUI_AUTODL_API") or AUTODL_API).rstrip("/")
    req = urllib.request.Request(base + "/api/v1/dev/wallet/balance", data=b"", method="POST",
                                 headers={"Authorization": token, "Accept": "application/json",
                                          "User-Agent": "gputui"})
    out: Dict[str, Any] = {"provider": "autodl", "ok": False, "balance": None, "currency": "CNY",
                           "source": "AutoDL API", "reason": None, "read_at": time.time()}
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            doc = json.loads(resp.read(1 << 20).decode("utf-8"))
    except urllib.error.HTTPError as exc:
        out["reason"] = ("the token was refused (HTTP %d)" if exc.code in (401, 403) else "HTTP %d") % exc.code
        return out
    except (urllib.error.URLError, socket.timeout, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        out["reason"] = "no answer (%s)" % (type(reason).__name__ if token in str(reason) else reason)
        return out
    data = doc.get("data") if isinstance(doc, dict) else None
    assets = data.get("assets") if isinstance(data, dict) else None
    if not isinstance(doc, dict) or doc.get("code") != "Success" or not isinstance(assets, (int, float)) \
            or isinstance(assets, bool):
        msg = doc.get("msg") if isinstance(doc, dict) else None
        out["reason"] = "the API said: %s" % (str(msg)[:120] if msg else "no balance")
        return out
    out.update(ok=True, balance=assets / 1000.0)
    return out


def with_wallet(price: Optional[Dict[str, Any]], wallet: Dict[str, Any]) -> Dict[str, Any]:
    """The box's provider_price answer (none on AutoDL: no key there) with the wallet's balance.
    The hourly price stays the typed one: the balance API does not say what this instance costs."""
    if not wallet.get("ok"):
        return dict(price or {}, provider="autodl", ok=False, reason=wallet.get("reason"))
    return {"provider": "autodl", "ok": True, "rate_per_hour": None, "currency": "CNY",
            "balance": wallet["balance"], "spend_per_hour": None, "storage_per_hour": None,
            "source": "AutoDL API", "reason": None, "fallback": "typed rate", "read_at": wallet["read_at"]}


def price_with_wallet(price: Optional[Dict[str, Any]], config: Any, host_cfg: Any) -> Optional[Dict[str, Any]]:
    """On an AutoDL box: `price` with the wallet's balance when a token is configured (blocking:
    run it off the event loop); a token in a file others can read is refused, and said."""
    token, problem = config.autodl_token(host_cfg)
    if problem:
        return {"provider": "autodl", "ok": False, "reason": problem}
    if not token:
        return price
    return with_wallet(price, read_balance(token))
