"""Price and balance read ON the box from the provider's API with the key already there (issue 22).

Stdlib only (urllib), Python 3.8. The key is read from PID 1's environment and sent only to the
provider's API in a header; it is never logged, never returned, never put in a URL. Any failure
(no network, a refused key, an unexpected answer) is a result saying "fallback to the typed rate".

Base URLs are overridable for tests: GPUTUI_RUNPOD_API, GPUTUI_VAST_API.
"""

import http.client
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request

from remote_probe.provider import facts as provider_facts
from remote_probe.procfs.reader import PROC

# GraphQL endpoint: https://docs.runpod.io/sdks/graphql/manage-pods (api.runpod.io/graphql). Sending the key
# as a Bearer header instead of ?api_key= keeps it out of URLs: that RunPod's GraphQL accepts the header is
# UNCONFIRMED from a page in this session.
RUNPOD_API = "https://api.runpod.io"
# https://docs.vast.ai/api/llms.txt: base https://console.vast.ai/api/v0, "Authorization: Bearer $VAST_API_KEY"
VAST_API = "https://console.vast.ai"
TIMEOUT = 4.0
# clientBalance, currentSpendPerHr: https://docs.runpod.io/runpodctl/reference/runpodctl-user.md (example output);
# pods { costPerHr adjustedCostPerHr }: field names from the issue (UNCONFIRMED from the GraphQL spec here)
RUNPOD_QUERY = "query { myself { clientBalance currentSpendPerHr pods { id costPerHr adjustedCostPerHr } } }"
MAX_BODY = 1 << 20


def fallback(provider, reason):
    return {"provider": provider, "ok": False, "fallback": "typed rate", "reason": reason}


def _base(var, default):
    # our environment first, then PID 1's (where a box's configuration lives, as the keys do)
    return (os.environ.get(var) or provider_facts.pid1_environ().get(var) or default).rstrip("/")


def _request(url, key, body=None, timeout=TIMEOUT):
    """JSON from `url`, or raise ApiError with a reason that never holds the key."""
    headers = {"Authorization": "Bearer " + key, "Accept": "application/json", "User-Agent": "gputui-probe"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read(MAX_BODY)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise ApiError("the key was refused (HTTP %d)" % exc.code)
        raise ApiError("HTTP %d" % exc.code)
    except (urllib.error.URLError, socket.timeout, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        raise ApiError("no network (%s)" % (type(reason).__name__ if key in str(reason) else reason))
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError:
        raise ApiError("not JSON")


class ApiError(Exception):
    pass


def _num(v):
    try:
        return None if v is None or isinstance(v, bool) else float(v)
    except (TypeError, ValueError):
        return None


def read_runpod(pod_id, key, timeout=TIMEOUT):
    if not key:
        return fallback("runpod", "no RUNPOD_API_KEY on the box")
    try:
        doc = _request(_base("GPUTUI_RUNPOD_API", RUNPOD_API) + "/graphql", key, {"query": RUNPOD_QUERY}, timeout)
    except ApiError as exc:
        return fallback("runpod", str(exc))
    me = ((doc or {}).get("data") or {}).get("myself") if isinstance(doc, dict) else None
    if not isinstance(me, dict):
        errors = doc.get("errors") if isinstance(doc, dict) else None
        msg = errors[0].get("message") if isinstance(errors, list) and errors and isinstance(errors[0], dict) else None
        return fallback("runpod", "the API answered without an account%s" % (": %s" % str(msg)[:120] if msg else ""))
    pod = next((p for p in me.get("pods") or () if isinstance(p, dict) and p.get("id") == pod_id), None)
    rate = None
    if pod:
        # adjustedCostPerHr: the price after discounts when present, else costPerHr
        rate = _num(pod.get("adjustedCostPerHr")) or _num(pod.get("costPerHr"))
    return {"provider": "runpod", "ok": rate is not None or _num(me.get("clientBalance")) is not None,
            "rate_per_hour": rate, "currency": "USD", "balance": _num(me.get("clientBalance")),
            "spend_per_hour": _num(me.get("currentSpendPerHr")), "storage_per_hour": None,
            "source": "RunPod API", "reason": None if pod else "this pod is not in the account's list",
            "fallback": None if rate is not None else "typed rate"}


def read_vast(instance_id, key, timeout=TIMEOUT):
    if not key:
        return fallback("vast", "no CONTAINER_API_KEY on the box")
    base = _base("GPUTUI_VAST_API", VAST_API) + "/api/v0"
    try:
        # GET /api/v0/instances/{id}/ -> {"instances": {...}} (the shape vast-cli reads: UNCONFIRMED from a page)
        doc = _request("%s/instances/%s/" % (base, instance_id), key, timeout=timeout)
    except ApiError as exc:
        return fallback("vast", str(exc))
    inst = doc.get("instances") if isinstance(doc, dict) else None
    if isinstance(inst, list):
        inst = inst[0] if inst else None
    if not isinstance(inst, dict):
        return fallback("vast", "the API answered without this instance")
    balance = None
    try:
        # GET /api/v0/users/current/ -> credit (field names "credit"/"credit_balance": UNCONFIRMED from a page)
        user = _request(base + "/users/current/", key, timeout=timeout)
        if isinstance(user, dict):
            balance = _num(user.get("credit_balance")) if "credit_balance" in user else _num(user.get("credit"))
    except ApiError:
        pass  # the price alone is still worth having
    rate = _num(inst.get("dph_total"))  # dollars per hour, GPU + storage + ...
    return {"provider": "vast", "ok": rate is not None, "rate_per_hour": rate, "currency": "USD",
            "balance": balance, "spend_per_hour": rate, "storage_per_hour": _num(inst.get("storage_cost")),
            "source": "Vast.ai API", "reason": None, "fallback": None if rate is not None else "typed rate"}


def read(proc=PROC, timeout=TIMEOUT):
    """The price and balance for this box, from whichever provider's key PID 1 carries."""
    env = provider_facts.pid1_environ(proc)
    env.update(os.environ)
    if env.get("RUNPOD_POD_ID"):
        return read_runpod(env["RUNPOD_POD_ID"], env.get("RUNPOD_API_KEY"), timeout)
    if env.get("CONTAINER_ID") and (env.get("CONTAINER_API_KEY") or env.get("VAST_CONTAINERLABEL")):
        return read_vast(env["CONTAINER_ID"], env.get("CONTAINER_API_KEY"), timeout)
    return fallback(None, "no provider API key on this box")


CACHE_SECONDS = 300.0  # a price changes rarely; the provider's API is not asked on every connect
FAILED_CACHE_SECONDS = 60.0  # no network / a refused key: asked again a minute later, not every request


class PriceCache:
    """The daemon's last answer from read(), reused for a few minutes; one read at a time
    (two laptops connecting at once make one call). Each answer says when it was read."""

    def __init__(self, reader=None, clock=time.time, ttl=CACHE_SECONDS, failed_ttl=FAILED_CACHE_SECONDS):
        self.reader = reader or read
        self.clock = clock
        self.ttl, self.failed_ttl = ttl, failed_ttl
        self.result = None
        self.at = 0.0
        self.lock = threading.Lock()

    def _valid(self, now):
        if self.result is None:
            return False
        return now - self.at < (self.ttl if self.result.get("ok") else self.failed_ttl)

    def get(self, fresh=False):
        with self.lock:
            now = self.clock()
            if not fresh and self._valid(now):
                return dict(self.result, cached=True)
            result = self.reader()
            self.result, self.at = dict(result, read_at=now), now
            return dict(self.result, cached=False)


def daemon_cache(daemon):
    """The PriceCache of one daemon, made on first use."""
    cache = getattr(daemon, "price_cache", None)
    if cache is None:
        cache = daemon.price_cache = PriceCache()
    return cache
