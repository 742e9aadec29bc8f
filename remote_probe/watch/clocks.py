"""Clocks that delete data or stop the job (issue 36): a spot/preemption notice the box can
see, and the provider balance running out, each counted down.

- **Spot notices** from the cloud's metadata service, polled every POLL_S in a thread with
  TIMEOUT_S per call (never on the daemon's sampling loop), and only where the box looks
  like that cloud (DMI strings, /sys/hypervisor/uuid) or a base URL is overridden:
  AWS ``spot/instance-action`` (IMDSv2 token, IMDSv1 if the token PUT is refused),
  GCE ``instance/preempted`` ("TRUE": ~30 s left), Azure scheduled events (Preempt,
  Terminate with NotBefore). The base URLs come from GPUTUI_IMDS_AWS / _GCE / _AZURE, or
  from ``<state dir>/imds.json`` ({"aws": url, ...}; a private file, for tests whose daemon
  does not see their environment).
- **balance_zero**: the provider balance, counted down at the spend per hour from
  budget_watch's facts (its own functions), is gone at ``at`` (RunPod stops the pod then).

A clock is {"kind", "source", "action", "at" (epoch), "seconds_left", "what" (words)}.
The parse functions are pure: (HTTP status, body bytes, now) -> clock(s). Stdlib only.
"""

import calendar
import email.utils
import json
import logging
import os
import socket
import stat
import threading
import time
import urllib.error
import urllib.request

from remote_probe.watch import budget_watch

log = logging.getLogger("gputui.probe")

POLL_S = 5.0
TIMEOUT_S = 1.0
GCE_NOTICE_S = 30.0  # GCE preempts ~30 s after it says so
BALANCE_CLOCK_S = 48 * 3600.0  # a balance that lasts longer than this is not a clock yet
MAX_BODY = 1 << 16
OVERRIDE_FILE = "imds.json"
ENV = {"aws": "GPUTUI_IMDS_AWS", "gce": "GPUTUI_IMDS_GCE", "azure": "GPUTUI_IMDS_AZURE"}
DEFAULT_BASE = {"aws": "http://169.254.169.254", "gce": "http://metadata.google.internal",
                "azure": "http://169.254.169.254"}
AWS_TOKEN_TTL = 21600
MISSES_BEFORE_SLOW = 3
SLOW_EVERY = 12  # polls: a service that never answers is asked once a minute
AWS_ACTIONS = ("terminate", "stop", "hibernate")
AZURE_TYPES = {"Preempt": "preempt", "Terminate": "terminate"}
SOURCE_NAMES = {"aws": "AWS spot interruption", "gce": "GCE preemption",
                "azure": "Azure scheduled event"}


# ---- pure parse functions ---------------------------------------------------------------

def parse_iso_utc(text):
    """'2026-12-06T19:36:00Z' (optionally with fractions) -> epoch, or None."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if text.endswith("Z"):
        text = text[:-1]
    text = text.split(".", 1)[0]
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))
    except (ValueError, OverflowError):
        return None


def parse_http_date(text):
    """'Mon, 19 Sep 2016 18:29:47 GMT' -> epoch, or None."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        parsed = email.utils.parsedate_tz(text)
        return float(email.utils.mktime_tz(parsed)) if parsed else None
    except (TypeError, ValueError, OverflowError):
        return None


def spot_clock(source, action, at, now):
    return {"kind": "spot_notice", "source": source, "action": action, "at": at,
            "seconds_left": max(0.0, round(at - now, 1)),
            "what": "%s (%s)" % (SOURCE_NAMES[source], action)}


def _json(body):
    try:
        return json.loads(body.decode("utf-8") if isinstance(body, bytes) else body)
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None


def parse_aws(status, body, now):
    """spot/instance-action: 404 is no notice; 200 {"action", "time"} -> a clock."""
    if status != 200:
        return None
    doc = _json(body)
    if not isinstance(doc, dict) or doc.get("action") not in AWS_ACTIONS:
        return None
    at = parse_iso_utc(doc.get("time"))
    return None if at is None else spot_clock("aws", doc["action"], at, now)


def parse_gce(status, body, now, first_seen=None):
    """instance/preempted: "TRUE" -> a clock ~30 s after it was first seen; else None."""
    if status != 200 or not isinstance(body, (bytes, str)):
        return None
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    if text.strip().upper() != "TRUE":
        return None
    return spot_clock("gce", "preempt", (first_seen or now) + GCE_NOTICE_S, now)


def parse_azure(status, body, now, vm_name=None):
    """Scheduled events -> a clock per Preempt/Terminate event for this VM (NotBefore)."""
    if status != 200:
        return []
    doc = _json(body)
    events = doc.get("Events") if isinstance(doc, dict) else None
    out = []
    for ev in events if isinstance(events, list) else ():
        if not isinstance(ev, dict) or ev.get("EventType") not in AZURE_TYPES:
            continue
        resources = ev.get("Resources")
        if vm_name and isinstance(resources, list) and resources and vm_name not in resources:
            continue  # another VM of the availability set
        at = parse_http_date(ev.get("NotBefore"))
        out.append(spot_clock("azure", AZURE_TYPES[ev["EventType"]],
                              now if at is None else at, now))
    return out


def balance_clock(facts, now):
    """The balance counted down (budget_watch's facts) -> a balance_zero clock, or None
    while unknown, not spent from, or lasting more than BALANCE_CLOCK_S."""
    if not facts:
        return None
    left = budget_watch.balance_left(facts, now)
    spend = budget_watch.spend_of(facts)
    if left is None or not spend or spend <= 0:
        return None
    seconds = max(0.0, left / spend * 3600.0)
    if seconds > BALANCE_CLOCK_S:
        return None
    return {"kind": "balance_zero", "source": "provider", "action": "stop", "at": now + seconds,
            "seconds_left": round(seconds, 1),
            "what": "provider balance runs out (the box is stopped)"}


def looks_like(sys_root="/sys"):
    """-> the clouds this box looks like, from DMI strings (no network)."""
    def read(name):
        try:
            with open(os.path.join(sys_root, name), "rb") as f:
                return f.read(4096).decode("utf-8", "replace").strip()
        except OSError:
            return ""
    dmi = " ".join(read("class/dmi/id/" + n) for n in ("sys_vendor", "product_name", "bios_vendor"))
    clouds = []
    if ("Amazon EC2" in dmi or read("hypervisor/uuid").lower().startswith("ec2")
            or "amazon" in read("class/dmi/id/bios_version").lower()):  # the older Xen ones
        clouds.append("aws")
    if "Google" in dmi:
        clouds.append("gce")
    if "Microsoft Corporation" in dmi:
        clouds.append("azure")
    return clouds


def overrides(state_dir, environ=None):
    """{source: base URL} from the environment, else the private <state dir>/imds.json."""
    environ = os.environ if environ is None else environ
    out = {src: environ[var] for src, var in ENV.items() if environ.get(var)}
    path = os.path.join(state_dir, OVERRIDE_FILE) if state_dir else None
    if not out and path:
        try:
            st = os.lstat(path)
            private = (stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()
                       and not st.st_mode & 0o022)
            if private:
                with open(path, "rb") as f:
                    doc = _json(f.read(MAX_BODY))
                if isinstance(doc, dict):
                    out = {s: u for s, u in doc.items()
                           if s in ENV and isinstance(u, str) and u.startswith("http://")}
        except OSError:
            pass
    return out


def left_words(seconds):
    """2 min, 45 s, 3 h 10 min."""
    seconds = max(0, int(round(seconds or 0)))
    if seconds < 120:
        return "%d s" % seconds
    minutes = seconds // 60
    if minutes < 120:
        return "%d min" % minutes
    return "%d h %d min" % (minutes // 60, minutes % 60)


def at_words(at):
    return time.strftime("%H:%M UTC", time.gmtime(at))


# ---- the poller ---------------------------------------------------------------------------

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy


def http(method, url, headers, timeout=TIMEOUT_S):
    """-> (status, body); (None, b"") when unreachable."""
    req = urllib.request.Request(url, method=method, headers=headers)
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return resp.status, resp.read(MAX_BODY)
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    except (OSError, ValueError):
        return None, b""


class ClockWatch:
    """Polls the metadata services of the cloud this box is, in its own thread."""

    def __init__(self, state_dir, sys_root="/sys", environ=None, fetch=http, poll_s=POLL_S):
        self.state_dir = state_dir
        self.sys_root = sys_root
        self.environ = environ
        self.fetch = fetch
        self.poll_s = poll_s
        self.lock = threading.Lock()
        self.spot = {}  # source -> [clocks]
        self.gce_first = None
        self.aws_token = None
        self.azure_name = None
        self.polls = 0
        self.misses = {}  # source -> polls in a row it did not answer
        self.unreached = False
        self.clouds = looks_like(sys_root)
        self.stopped = threading.Event()
        self.thread = None

    def start(self):
        # with no cloud and no override a poll only looks at the override file: no network
        self.thread = threading.Thread(target=self._run, name="clock-watch", daemon=True)
        self.thread.start()

    def stop(self):
        self.stopped.set()

    def _run(self):
        while not self.stopped.is_set():
            try:
                self.poll_once()
            except Exception:  # a bug here must not end the daemon's watch
                log.exception("clock watch failed")
            self.stopped.wait(self.poll_s)

    def _fetch(self, method, url, headers):
        status, body = self.fetch(method, url, headers)
        if status is None:
            self.unreached = True
        return status, body

    def poll_once(self, now=None):
        now = time.time() if now is None else now
        found = {}
        over = overrides(self.state_dir, self.environ)
        self.polls += 1
        for src, base in (over or {s: DEFAULT_BASE[s] for s in self.clouds}).items():
            # a cloud-looking box whose service never answers (Hyper-V on a desk, a container
            # without the route): asked once a minute, not every poll (overrides always)
            if not over and self.misses.get(src, 0) >= MISSES_BEFORE_SLOW and self.polls % SLOW_EVERY:
                found[src] = self.spot.get(src, [])
                continue
            self.unreached = False
            base = base.rstrip("/")
            if src == "aws":
                clock = parse_aws(*self._aws(base), now)
                found[src] = [clock] if clock else []
            elif src == "gce":
                status, body = self._fetch("GET", base + "/computeMetadata/v1/instance/preempted",
                                          {"Metadata-Flavor": "Google"})
                if self.gce_first is None and parse_gce(status, body, now):
                    self.gce_first = now
                clock = parse_gce(status, body, now, self.gce_first)
                found[src] = [clock] if clock else []
            elif src == "azure":
                status, body = self._fetch("GET", base + "/metadata/scheduledevents?api-version=2020-07-01",
                                          {"Metadata": "true"})
                found[src] = parse_azure(status, body, now, self._azure_name(base))
            self.misses[src] = self.misses.get(src, 0) + 1 if self.unreached else 0
        with self.lock:
            self.spot = found
        return found

    def _aws(self, base):
        url = base + "/latest/meta-data/spot/instance-action"
        for attempt in range(2):
            if self.aws_token is None:
                status, body = self._fetch("PUT", base + "/latest/api/token",
                                          {"X-aws-ec2-metadata-token-ttl-seconds": str(AWS_TOKEN_TTL)})
                self.aws_token = body.decode("ascii", "replace").strip() if status == 200 else ""
            headers = {"X-aws-ec2-metadata-token": self.aws_token} if self.aws_token else {}
            status, body = self._fetch("GET", url, headers)
            if status == 401:  # the token expired, or IMDSv2 is required: a fresh one next
                self.aws_token = None
                if attempt == 0:
                    continue
            return status, body
        return None, b""

    def _azure_name(self, base):
        """The VM's name as scheduled events list it (asked once), else the hostname."""
        if self.azure_name is None:
            status, body = self._fetch(
                "GET", base + "/metadata/instance/compute/name?api-version=2020-09-01&format=text",
                {"Metadata": "true"})
            name = body.decode("utf-8", "replace").strip() if status == 200 else ""
            self.azure_name = name if 0 < len(name) <= 200 else ""
        return self.azure_name or socket.gethostname()

    def clocks(self, now, billing_facts=None):
        """Every clock now, soonest first, seconds_left counted to `now`."""
        with self.lock:
            spot = [dict(c) for cs in self.spot.values() for c in cs]
        for c in spot:
            c["seconds_left"] = max(0.0, round(c["at"] - now, 1))
        bal = balance_clock(billing_facts, now)
        out = spot + ([bal] if bal else [])
        out.sort(key=lambda c: c["at"])
        return out
