"""`gputui exporter`: the fleet's live sessions served as Prometheus /metrics.

Only the messages to the person running it are translated; metric names, labels and HELP
texts (tui.core.metrics) stay English whatever the locale: dashboards and alert rules
(Grafana, Prometheus) match on them."""

import asyncio
import signal
import sys

from prometheus_client import CollectorRegistry, start_http_server

from tui.core.i18n import _, ngettext
from tui.core.metrics import FleetCollector, export_view
from tui.remote.fleet_pool import open_fleet

PUBLISH_EVERY = 1.0


def parse_listen(text):
    """'127.0.0.1:9835' / ':9835' / '[::1]:9835' -> (address, port). ValueError if malformed."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(_("--listen wants ADDRESS:PORT, e.g. 127.0.0.1:9835 (got %r)") % text)
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


async def serve(hosts, addr, port, ssh_config=None, remote_python=None, announce=sys.stderr):
    """Serve until SIGINT/SIGTERM; -> exit code."""
    fleet, notices = open_fleet(hosts, ssh_config=ssh_config, remote_python=remote_python)
    for notice in notices:
        print("gputui: %s" % notice, file=announce)
    collector = FleetCollector()
    registry = CollectorRegistry()
    registry.register(collector)
    try:
        server, thread = start_http_server(port, addr, registry=registry)
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
    try:
        while not stop.is_set():
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
