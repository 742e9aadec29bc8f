"""`gputui exporter`: the fleet's live sessions served as Prometheus /metrics.

Only the messages to the person running it are translated; metric names, labels and HELP
texts (tui.core.fleet.metrics) stay English whatever the locale: dashboards and alert rules
(Grafana, Prometheus) match on them."""

import asyncio
import base64
import hmac
import ipaddress
import os
import signal
import socket
import socketserver
import sys
import threading
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from tui.core.config_reload import ConfigWatcher, fleet_reload_lines
from tui.core.i18n import _, ngettext
from tui.core.fleet.metrics import FleetCollector, export_view
from tui.remote.fleet_pool import open_fleet
from tui.remote.notify_push import reload_notify_config

PUBLISH_EVERY = 1.0


def parse_listen(text):
    """'127.0.0.1:9835' / ':9835' / '[::1]:9835' -> (address, port). ValueError if malformed."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(_("--listen wants ADDRESS:PORT, e.g. 127.0.0.1:9835 (got %r)") % text)
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


TOKEN_ENV = "GPUTUI_EXPORTER_TOKEN"


class Auth:
    """What a scrape must present: a bearer token (Prometheus `authorization:` with
    `credentials_file`), or basic auth (`basic_auth:`), or nothing when neither is set."""

    def __init__(self, token=None, basic=None):
        self.token = token  # str
        self.basic = basic  # "user:password"

    def __bool__(self):
        return bool(self.token or self.basic)

    def challenge(self):
        return 'Bearer realm="gputui"' if self.token else 'Basic realm="gputui"'


def authorized(header, auth):
    """Whether an Authorization header value satisfies `auth` (constant-time compares)."""
    if not auth:
        return True
    scheme, _sep, value = (header or "").strip().partition(" ")
    value = value.strip().encode("utf-8", "surrogateescape")
    scheme = scheme.lower()
    if auth.token and scheme == "bearer":
        return hmac.compare_digest(value, auth.token.encode())
    if auth.basic and scheme == "basic":
        try:
            given = base64.b64decode(value, validate=True)
        except ValueError:
            return False
        return hmac.compare_digest(given, auth.basic.encode())
    return False


def _read_secret(path, what):
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as f:
            text = f.read().strip()
    except OSError as exc:
        raise ValueError(_("cannot read the %s file %s: %s") % (what, path, exc.strerror or exc))
    if not text:
        raise ValueError(_("the %s file %s is empty") % (what, path))
    return text


def load_auth(table=None, env=None, token_file=None, basic_auth_file=None):
    """The exporter's Auth from (first found) --bearer-token-file / --basic-auth-file, the
    GPUTUI_EXPORTER_TOKEN environment variable, config `[exporter]` (bearer_token,
    bearer_token_file, basic_auth_file). Secrets never come from the command line itself:
    argv is readable by every user of the laptop (ps). A basic auth file holds user:password."""
    table = table if isinstance(table, dict) else {}
    env = os.environ if env is None else env
    if token_file:
        return Auth(token=_read_secret(token_file, _("bearer token")))
    if basic_auth_file:
        return Auth(basic=_basic(_read_secret(basic_auth_file, _("basic auth")), basic_auth_file))
    if env.get(TOKEN_ENV):
        return Auth(token=env[TOKEN_ENV].strip())
    if isinstance(table.get("bearer_token"), str) and table["bearer_token"].strip():
        return Auth(token=table["bearer_token"].strip())
    if isinstance(table.get("bearer_token_file"), str):
        return Auth(token=_read_secret(table["bearer_token_file"], _("bearer token")))
    if isinstance(table.get("basic_auth_file"), str):
        return Auth(basic=_basic(_read_secret(table["basic_auth_file"], _("basic auth")),
                                 table["basic_auth_file"]))
    return Auth()


def _basic(text, path):
    if ":" not in text:
        raise ValueError(_("the basic auth file %s must hold user:password") % path)
    return text.splitlines()[0]


def is_loopback(addr):
    if addr in ("localhost", ""):
        return addr == "localhost"
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def listen_warning(addr, auth):
    """What to say before serving on `addr`, or None (loopback: only this laptop)."""
    if is_loopback(addr):
        return None
    if auth:
        return _("warning: /metrics is served on %s, reachable from other machines (scrapes "
                 "must authenticate)") % addr
    return _("warning: /metrics is served on %s to anyone who can reach this laptop, without "
             "authentication: it shows your boxes, jobs and spending. Set a bearer token "
             "(%s, --bearer-token-file, or [exporter] bearer_token_file in the config) or "
             "listen on 127.0.0.1") % (addr, TOKEN_ENV)


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def start_server(addr, port, registry, auth):
    """prometheus-client's WSGI app behind the Authorization check, served by a thread."""
    metrics = make_wsgi_app(registry)

    def app(environ, start_response):
        if not authorized(environ.get("HTTP_AUTHORIZATION"), auth):
            start_response("401 Unauthorized", [("WWW-Authenticate", auth.challenge()),
                                                ("Content-Type", "text/plain")])
            return [b"401 Unauthorized\n"]
        return metrics(environ, start_response)

    class Server(socketserver.ThreadingMixIn, WSGIServer):
        daemon_threads = True
        address_family = socket.AF_INET6 if ":" in addr else socket.AF_INET

    server = make_server(addr, port, app, Server, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def reload_config(fleet, watch, explicit=False, announce=sys.stderr):
    """An edited config takes effect in the running exporter: host values now, and hosts added
    to it (unless the boxes were named on the command line) are connected and exported."""
    new = watch.poll()
    if new is None:
        return
    if new.broken:  # keep what was read before; say why
        lines = list(new.problems)
    else:
        added = [] if explicit else fleet.add_config_hosts(new)
        fleet.config = new
        lines = fleet_reload_lines(new, fleet.boxes, added)
        for host, session in fleet.sessions.items():  # new channels reach the boxes now
            lines += reload_notify_config(session, new.data, host)
    for line in lines:
        print("gputui exporter: %s" % line, file=announce, flush=True)


async def serve(hosts, addr, port, ssh_config=None, remote_python=None, announce=sys.stderr,
                auth=None):
    """Serve until SIGINT/SIGTERM; -> exit code."""
    auth = auth or Auth()
    warning = listen_warning(addr, auth)
    if warning:
        print("gputui: " + warning, file=announce, flush=True)
    fleet, notices = open_fleet(hosts, ssh_config=ssh_config, remote_python=remote_python)
    for notice in notices:
        print("gputui: %s" % notice, file=announce)
    collector = FleetCollector()
    registry = CollectorRegistry()
    registry.register(collector)
    try:
        server, thread = start_server(addr, port, registry, auth)
    except OSError as exc:
        print("gputui: " + _("cannot listen on %s:%d: %s") % (addr, port, exc.strerror or exc), file=announce)
        await fleet.close()
        return 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print("gputui exporter: " + ngettext("serving http://%s:%d/metrics for %d box",
                                         "serving http://%s:%d/metrics for %d boxes",
                                         len(fleet.boxes))
          % (addr if ":" not in addr else "[%s]" % addr, server.server_port, len(fleet.boxes)),
          file=announce, flush=True)
    fleet.start()
    watch = ConfigWatcher(getattr(fleet.config, "path", None))
    try:
        while not stop.is_set():
            reload_config(fleet, watch, explicit=bool(hosts), announce=announce)
            collector.publish([export_view(b) for b in fleet.boxes])
            fleet.persist()
            try:
                await asyncio.wait_for(stop.wait(), PUBLISH_EVERY)
            except asyncio.TimeoutError:
                pass
    finally:
        server.shutdown()
        server.server_close()
        await fleet.close()
    return 0
