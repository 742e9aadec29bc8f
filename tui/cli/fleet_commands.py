"""`gputui fleet` (every box at once, `--check` for cron) and `gputui exporter` (/metrics
for Prometheus): their options and what they do."""

import json
import sys

from tui.cli.shared import EXIT_CONNECT, EXIT_OK, EXIT_USAGE, run_remote
from tui.core.i18n import _, ngettext


def add_fleet_parsers(sub):
    p = sub.add_parser("fleet", help=_("every box at once (the default with no command); "
                                       "--check for cron: exit 1 when a box burns money idle"),
                       description=_("Every box at once: open ledger sessions plus every host in "
                                     "the config, live, with the forgotten-box alarm (a box billing "
                                     "while all its GPUs idle longer than idle_alarm_minutes)."))
    p.add_argument("hosts", nargs="*", metavar="HOST",
                   help=_("these boxes (default: open ledger sessions + every host in the config)"))
    p.add_argument("--ssh-config", metavar="FILE", help=_("read this ssh config instead of ~/.ssh/config"))
    p.add_argument("--remote-python", metavar="PATH", help=_("the python to run the probe with on the boxes"))
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help=_("print the fleet and the idle alarm, exit 1 when a box is idle and billing"))
    mode.add_argument("--json", action="store_true", help=_("machine-readable fleet, then exit"))
    p.add_argument("--timeout", type=float, default=60.0, metavar="S",
                   help=_("--check/--json: wait at most this long for the boxes (default 60)"))
    p = sub.add_parser("exporter", help=_("serve /metrics for Prometheus (DCGM names) for every fleet box"),
                       description=_("Serve /metrics for Prometheus from the fleet's live sessions: "
                                     "GPU metrics under dcgm-exporter's names and labels plus "
                                     "gputui's own (cost, rate, idle, jobs, autostop, dataloader)."))
    p.add_argument("hosts", nargs="*", metavar="HOST", help=_("these boxes (default: the fleet)"))
    p.add_argument("--listen", default="127.0.0.1:9835", metavar="ADDR:PORT",
                   help=_("where to serve /metrics (default 127.0.0.1:9835)"))
    p.add_argument("--ssh-config", metavar="FILE", help=_("read this ssh config instead of ~/.ssh/config"))
    p.add_argument("--remote-python", metavar="PATH", help=_("the python to run the probe with on the boxes"))
    p.add_argument("--bearer-token-file", metavar="FILE",
                   help=_("scrapes must send this token (Authorization: Bearer); also "
                          "GPUTUI_EXPORTER_TOKEN or [exporter] in the config"))
    p.add_argument("--basic-auth-file", metavar="FILE", help=_("scrapes must send this user:password (basic auth)"))


def cmd_fleet(args):
    if args.check or args.json:
        from tui.core.fleet.rows import check_exit_code, fleet_json, fleet_table
        from tui.remote.fleet_pool import fleet_rows
        result = run_remote(fleet_rows(args.hosts, ssh_config=args.ssh_config, timeout=args.timeout,
                                       remote_python=args.remote_python))
        if result is None:
            return EXIT_CONNECT
        rows, threshold_s, notices = result
        for notice in notices:
            print("gputui: %s" % notice, file=sys.stderr)
        if args.json:
            print(json.dumps(fleet_json(rows, threshold_s), indent=1))
        else:
            print(fleet_table(rows))
            print(fleet_alarm_line(rows))
        return check_exit_code(rows)
    from tui.ui.fleet_app import FleetApp
    FleetApp(hosts=args.hosts, ssh_config=args.ssh_config, remote_python=args.remote_python).run()
    return EXIT_OK


def fleet_alarm_line(rows):
    from tui.core.fleet.rows import alarm_text
    alarm = alarm_text(rows)
    live = sum(1 for r in rows if r.state == "live")
    if not rows:
        return _("no boxes: `gputui connect HOST` once, or add a [hosts.NAME] table to the config")
    return (_("ALARM: %s") % alarm) if alarm else ngettext(
        "%d of %d box live; none idle and billing", "%d of %d boxes live; none idle and billing",
        len(rows)) % (live, len(rows))


def cmd_exporter(args):
    from tui.core.config import Config
    from tui.remote.exporter import load_auth, parse_listen, serve
    try:
        addr, port = parse_listen(args.listen)
        auth = load_auth(Config.load().data.get("exporter"), token_file=args.bearer_token_file,
                         basic_auth_file=args.basic_auth_file)
    except ValueError as exc:
        print("gputui: %s" % exc, file=sys.stderr)
        return EXIT_USAGE
    code = run_remote(serve(args.hosts, addr, port, ssh_config=args.ssh_config,
                            remote_python=args.remote_python, auth=auth))
    return EXIT_CONNECT if code is None else code
