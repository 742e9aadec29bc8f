"""Command line: `gputui connect HOST`, `gputui demo`, `gputui status HOST [--json]`."""

import argparse
import gc
import logging
import os
import sys
import time

from tui import __version__
from tui.cli.contact import config_for, configured_python, host_settings, price_of, record_contact
from tui.cli.shared import (EXIT_CONNECT, EXIT_FAILED, EXIT_OK, EXIT_USAGE, VERDICT_WORDS,
                            _terminal_trust, asker_of, emit, emit_json, preload, print_notices, run_remote,
                            open_session, target_of, warn)
from tui.core.text.boxtext import visible
from tui.core.i18n import LANGUAGES, LanguageError, _, choose_language, set_language
from tui.core.private import open_private

# Each command imports what it needs when it runs (issue 26: `status` on a warm box is a few
# round trips; loading the UI, the transfer code or the fleet for it would be most of its time).
# tests/unit/tui/cli/test_cli_imports.py pins what `status` may load.


def add_box_options(p):
    p.add_argument("host", nargs="+", metavar="HOST",
                   help=_("the box, as you would give it to ssh: alias, user@host[:port], "
                        "ssh://user@host:port, or the provider's whole `ssh -p PORT user@host` "
                        "command (with -p -l -i -J -o -F)"))
    p.add_argument("--simulate", metavar="SCENARIO",
                   help=_("use the probe's GPU simulator with this scenario instead of the real GPU "
                        "(see `gputui scenarios`)"))
    p.add_argument("--ssh-config", metavar="FILE", help=_("read this ssh config instead of ~/.ssh/config"))
    p.add_argument("--remote-dir", metavar="DIR",
                   help=_("where the probe lives on the box (default ~/.cache/gputui)"))
    p.add_argument("--remote-python", metavar="PATH",
                   help=_("the python to run the probe with on the box (default: python3 on PATH)"))


def _fleet_parsers(sub):
    from tui.cli.fleet_commands import add_fleet_parsers
    add_fleet_parsers(sub)  # fleet and exporter


def _push_parser(sub):
    from tui.cli.push_cmd import add_push_parser
    add_push_parser(sub)


def _pull_parser(sub):
    from tui.cli.pull_cmd import add_pull_parser
    add_pull_parser(sub)


def _notify_parser(sub):
    from tui.cli.notify_cmd import add_parser
    add_parser(sub)


# The commands whose options live in their own module, and what adds them to the parser.
OWN_PARSERS = {"fleet": _fleet_parsers, "exporter": _fleet_parsers, "push": _push_parser,
               "pull": _pull_parser, "notify": _notify_parser}
COMMANDS = ("connect", "status", "doctor", "checklist", "demo", "scenarios", "ledger") + tuple(OWN_PARSERS)


def command_word(argv):
    """The command `argv` runs (the first word that is not an option, --log's value skipped),
    or None (none, `--help`, `--version`, a word that is not a command)."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return None
        if not word.startswith("-"):
            return word if word in COMMANDS else None
        if word in ("-h", "--help", "--version"):
            return None
        i += 2 if word == "--log" else 1
    return None


def build_parser(command=None):
    """The whole command line; with `command`, the other commands are left out, so their
    options are not built and their modules (OWN_PARSERS) not loaded to parse it (`gputui
    --help`, a typo: the whole)."""
    parser = argparse.ArgumentParser(prog="gputui", description=_(__doc__))  # the docstring is in the catalog
    parser.add_argument("--version", action="version", version="gputui %s" % __version__)
    parser.add_argument("--log", metavar="FILE", help=_("write a debug log here"))
    parser.add_argument("--lang", choices=LANGUAGES,
                        help=_("language of the screens and text output (default: config `language`, "
                             "then LC_ALL/LC_MESSAGES/LANG); JSON stays English"))
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND")
    # A known command gets only its own subparser: each add_parser with its ~10 help texts is
    # a millisecond of a warm `status` (issue 38); `--help` and a typo get them all.
    want = lambda name: command in (None, name)  # noqa: E731
    if want("connect"):
        p = sub.add_parser("connect", help=_("open the live dashboard of a box"), description=_("Open the live dashboard of a box."))
        add_box_options(p)
    if want("status"):
        p = sub.add_parser("status", help=_("print one snapshot of a box and exit"), description=_("Print one snapshot of a box and exit."))
        add_box_options(p)
        p.add_argument("--json", action="store_true", help=_("machine-readable output"))
    if want("doctor"):
        p = sub.add_parser("doctor", help=_("preflight a freshly rented box: is it what you paid for?"), description=_("Preflight a freshly rented box: is it what you paid for?"))
        add_box_options(p)
        p.add_argument("--json", action="store_true", help=_("machine-readable output"))
        p.add_argument("--no-smoke", action="store_true", help=_("skip the matmul on each GPU"))
    if want("checklist"):
        p = sub.add_parser("checklist", help=_("the shutdown checklist: is it safe to release the box?"), description=_("The shutdown checklist: is it safe to release the box?"))
        add_box_options(p)
        p.add_argument("--json", action="store_true", help=_("machine-readable output"))
    if want("demo"):
        p = sub.add_parser("demo", help=_("the dashboard on a simulated GPU box over a real loopback SSH session"), description=_("The dashboard on a simulated GPU box over a real loopback SSH session."))
        p.add_argument("--scenario", default="a100x2",
                       help=_("simulator scenario (default a100x2; `gputui scenarios` lists them)"))
    if want("scenarios"):
        sub.add_parser("scenarios", help=_("list the simulator scenarios"), description=_("List the simulator scenarios."))
    if want("ledger"):
        p = sub.add_parser("ledger", help=_("every billing session gputui has seen"), description=_("Every billing session gputui has seen."))
        fmt_group = p.add_mutually_exclusive_group()
        fmt_group.add_argument("--json", action="store_true", help=_("machine-readable output (JSON)"))
        fmt_group.add_argument("--csv", action="store_true", help=_("spreadsheet output (CSV)"))
    added = []
    for name, add in OWN_PARSERS.items():
        if want(name) and add not in added:
            added.append(add)
            add(sub)
    return parser


BOX_COMMANDS = ("connect", "status", "doctor", "checklist")
# Commands that end within seconds of starting, with the cyclic garbage collector off as
# tui.start left it (issue 38): what they allocate lives until the exit anyway.
QUICK_COMMANDS = ("status", "doctor", "scenarios", "ledger")
# gputui's own options and whether they take a value; every other word after a box command
# belongs to the destination (ssh's -p/-l/-i/-J/-o/-F, the pasted `ssh ...` words).
GPUTUI_OPTIONS = {"--simulate": True, "--ssh-config": True, "--remote-dir": True,
                  "--remote-python": True, "--log": True, "--json": False, "--no-smoke": False,
                  "-h": False, "--help": False}


def split_box_argv(argv):
    """`status ssh -p 2 root@h --json` -> `status --json -- ssh -p 2 root@h`, so argparse
    never mistakes ssh's -p for one of ours and the destination words stay in order."""
    argv = list(argv)
    if "--" in argv:
        return argv  # the user already separated them
    i = 0
    while i < len(argv):
        if argv[i] in BOX_COMMANDS:
            break
        if not argv[i].startswith("-"):
            return argv  # another command
        i += 2 if argv[i] == "--log" else 1
    else:
        return argv
    head, ours, dest = argv[:i + 1], [], []
    rest = argv[i + 1:]
    j = 0
    while j < len(rest):
        word = rest[j]
        name = word.split("=", 1)[0]
        if name in GPUTUI_OPTIONS:
            ours.append(word)
            if GPUTUI_OPTIONS[name] and "=" not in word and j + 1 < len(rest):
                ours.append(rest[j + 1])
                j += 1
        elif word.startswith("--"):
            ours.append(word)  # unknown long option: argparse says so
        else:
            dest.append(word)
        j += 1
    return head + ours + (["--"] + dest if dest else [])


def cmd_status(args):
    from tui.cli.contact import AFTER_REPLY
    from tui.core.notify.wire import notify_config
    from tui.remote.session import snapshot
    cfg, host_cfg = config_for(args.host)
    host_settings(args, host_cfg)
    target = target_of(args)
    loaded = preload(("tui.core.report",) + AFTER_REPLY)
    reply = run_remote(snapshot(target, simulate=args.simulate, remote_dir=args.remote_dir,
                                ask_trust=_terminal_trust, remote_python=args.remote_python,
                                asker=asker_of(args), notify_config=notify_config(cfg.data, args.host)[0],
                                price=True))
    loaded()
    if reply is None:
        warn_shutdown_clock(args.host)  # issue 36: a shut-down AutoDL box's deletion clock
        return EXIT_CONNECT
    from tui.core.report import jobs_json, status_json, status_text
    print_notices(reply.get("notices"))
    doc = status_json(reply, args.host)
    doc["billing"] = record_contact(args.host, reply["inventory"], cfg, reply.get("sample"),
                                    price=reply.get("price"))
    doc["jobs"] = jobs_json(reply, doc["billing"])
    if args.json:
        emit_json(doc)
    else:
        emit(status_text(doc))
    return EXIT_OK


def cmd_doctor(args):
    from tui.core import from_wire
    from tui.core.layout import pad
    from tui.core.checks.preflight import exit_code, run_checks, worst
    from tui.core.providers import resolve
    from tui.core.report import doctor_request
    from tui.remote.session import snapshot
    cfg, host_cfg = config_for(args.host)
    host_settings(args, host_cfg)
    t0 = time.time()
    reply = run_remote(snapshot(target_of(args), simulate=args.simulate, remote_dir=args.remote_dir,
                                ask_trust=_terminal_trust, remote_python=args.remote_python,
                                preflight=doctor_request(host_cfg, not args.no_smoke),
                                asker=asker_of(args)))
    if reply is None:
        return EXIT_CONNECT
    print_notices(reply.get("notices"))
    record_contact(args.host, reply["inventory"], cfg, reply.get("sample"))
    facts = reply["preflight"]
    preset = resolve((reply["inventory"].get("host") or {}).get("provider") or {}, host_cfg)
    sample = reply.get("sample") or {}
    dyn = dict(enumerate(from_wire.sample(sample).gpus or ()))
    checks = run_checks(facts, host_cfg, preset, dyn, smoke_asked=not args.no_smoke)
    code = exit_code(checks)
    if args.json:
        emit_json({"host": args.host, "verdict": worst(checks), "seconds": round(time.time() - t0, 1),
                   "checks": [c.__dict__ for c in checks], "facts": facts})
    else:
        marks = {"pass": "✓", "warn": "!", "fail": "✗"}
        for c in checks:
            emit(" %s %s %s" % (marks[c.verdict], pad(visible(c.name, limit=28), 28), visible(c.reason)))
        emit("%s: %s (%.1f s)" % (args.host, _(VERDICT_WORDS[worst(checks)]), time.time() - t0))
    return code


async def checklist_run(args, host_cfg):
    from tui.core.billing.clock import BillingClock
    from tui.core.billing.ledger import Ledger, LedgerError
    from tui.core.providers import resolve
    from tui.core import from_wire
    from tui.core.checks.release_actions import Release
    from tui.core.report import procs_from
    session = await open_session(args)
    try:
        snap = await session.fresh_snapshot()
        inv = snap["inventory"]
        try:
            ledger = Ledger()
        except (LedgerError, OSError):
            ledger = None
        clock = BillingClock(args.host, host_cfg, ledger)
        clock.on_inventory(inv)
        clock.set_provider_price(await price_of(session))  # the bill at the provider's price (issue 22)
        clock.persist(force=True)
        preset = resolve((inv.get("host") or {}).get("provider") or {}, host_cfg)
        rel = Release(args.host, session, host_cfg, preset, clock.session_key(inv))
        await rel.gather()
        sample = snap.get("sample") or {}
        gpus = from_wire.sample(sample).gpus or ()
        tmux_sessions = ((snap.get("jobs") or {}).get("tmux") or {}).get("sessions") or []
        items = rel.items(gpus, procs_from(sample, snap.get("proc_meta")), tmux_sessions,
                          snap.get("autostop"), clock.figures(), from_wire.jobs(snap.get("jobs")).watch)
        return items, rel
    finally:
        await session.close()


def cmd_checklist(args):
    from tui.core.checks.checklist import exit_code, verdict
    from tui.core.layout import pad
    _cfg, host_cfg = config_for(args.host)
    host_settings(args, host_cfg)
    t0 = time.time()
    result = run_remote(checklist_run(args, host_cfg))
    if result is None:
        return EXIT_CONNECT
    items, rel = result
    if args.json:
        emit_json({"host": args.host, "verdict": verdict(items), "seconds": round(time.time() - t0, 2),
                   "download_dir": rel.base, "items": [i.__dict__ for i in items]})
    else:
        marks = {"pass": "✓", "warn": "!", "fail": "✗"}
        for i in items:
            emit(" %s %s %s" % (marks[i.verdict], pad(visible(i.name), 28), visible(i.reason)))
            for d in i.details[:8]:
                emit("      %s" % visible(d))
            if i.verdict != "pass" and not i.waived and i.fix:
                emit("      %s %s" % (_("fix in `gputui connect` (R):"), visible(i.fix)))
        said = {"pass": _("safe to release"), "warn": _("only warnings: review them before releasing"),
                "fail": _("not safe to release yet")}[verdict(items)]
        emit("%s: %s — %s (%.1f s)" % (args.host, _(VERDICT_WORDS[verdict(items)]), said, time.time() - t0))
    return exit_code(items)


def cmd_ledger(args):
    from tui.core.billing.ledger import Ledger, LedgerError, ledger_csv, ledger_table
    try:
        ledger = Ledger()
        if ledger.notice:  # the old ledger was moved aside: an empty list would be a lie
            warn(ledger.notice)
            return EXIT_FAILED
        rows = ledger.sessions()
    except LedgerError as exc:  # locked or unreadable: said once, nothing moved
        warn(exc)
        return EXIT_FAILED
    if args.json:
        emit_json(rows)
    elif args.csv:
        sys.stdout.write(ledger_csv(rows))
    else:
        from tui.core.jobs.clock_lines import shutdown_clocks, shutdown_line
        emit("\n".join([ledger_table(rows)] + [shutdown_line(c) for c in shutdown_clocks(rows)]))
    return EXIT_OK


def warn_shutdown_clock(host):
    """The box did not answer: if its last session ended on AutoDL, when it is released."""
    from tui.core.jobs.clock_lines import shutdown_clocks, shutdown_line
    from tui.core.billing.ledger import Ledger, LedgerError
    try:
        rows = [r for r in Ledger().sessions() if r.get("host") == host]
    except LedgerError:
        return
    for clock in shutdown_clocks(rows):
        print(shutdown_line(clock), file=sys.stderr)


def cmd_connect(args):
    from tui.ui.app import GputuiApp
    app = GputuiApp(target_of(args), simulate=args.simulate, remote_dir=args.remote_dir,
                    host_label=args.host, remote_python=args.remote_python)
    app.run()
    return app_exit(app)


def app_exit(app):
    """The app's exit status: a crash is one line (reason, log path) and not 0."""
    from tui.core.crash import EXIT_CRASH, crash_line
    if app is None:
        return EXIT_FAILED
    crash = getattr(app, "crash", None)
    if crash is not None:
        print(crash_line(crash, getattr(app, "crash_log", None)), file=sys.stderr)
        return EXIT_CRASH
    return app.return_code or EXIT_OK


def cmd_demo(args):
    import asyncio
    from tui.ui.demo import run_demo
    return app_exit(asyncio.run(run_demo(args.scenario)))


def unknown_scenario(name):
    """None when the simulator knows `name`, else the one-line error with the list."""
    from remote_probe.scenario_files import scenario_names
    names = scenario_names()
    if name in names:
        return None
    return _("unknown scenario %r; the simulator knows: %s (see `gputui scenarios`)") % (
        name, ", ".join(names))


def cmd_scenarios(_args):
    from remote_probe.backends.sim import load_scenario, scenario_names
    for name in scenario_names():
        emit("%-12s %s" % (name, load_scenario(name).get("description", "")))
    return EXIT_OK


def take_lang(argv):
    """(--lang value or None, argv without it), wherever it is before a `--`, so it works
    before and after the command word alike."""
    lang, rest, i = None, [], 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            rest += argv[i:]
            break
        if word == "--lang" and i + 1 < len(argv):
            lang, i = argv[i + 1], i + 2
            continue
        if word.startswith("--lang="):
            lang = word.split("=", 1)[1]
        else:
            rest.append(word)
        i += 1
    return lang, rest


def setup_language(lang):
    """--lang, then the config's `language`, then the locale variables. Runs before any UI module
    is imported, so texts set at class definition (key bindings) come out translated."""
    from tui.core.config import Config
    return set_language(choose_language(lang, Config.load().data))


def with_default_command(argv):
    """Bare `gputui` (maybe with --log FILE) opens the fleet."""
    argv = list(argv)
    if not [a for i, a in enumerate(argv) if not a.startswith("--log") and
            not (i and argv[i - 1] == "--log")]:
        argv.append("fleet")
    return argv


def head_start(args):
    """`status`: `ssh -G` and the TCP connection to the box begin now, in a thread, while this
    one imports asyncssh (issue 38; tui.core.ssh_g). A destination that does not parse starts
    nothing: target_of says why."""
    import dataclasses
    import shutil
    from tui.core import ssh_g
    from tui.core.destination import DestinationError, parse_destination
    try:
        dest = parse_destination(args.host)
    except DestinationError:
        return None
    return ssh_g.begin(dataclasses.replace(dest, config=args.ssh_config or dest.config),
                       shutil.which("ssh"))


def main(argv=None):
    lang, argv = take_lang(list(sys.argv[1:] if argv is None else argv))
    try:
        setup_language(lang)
    except LanguageError as exc:
        print("gputui: %s" % exc, file=sys.stderr)
        return EXIT_USAGE
    argv = split_box_argv(with_default_command(argv))
    parser = build_parser(command_word(argv))
    args = parser.parse_args(argv)
    if getattr(args, "json", False) or getattr(args, "csv", False):
        set_language("en")  # scripts read JSON and CSV: keys and values stay English
    if args.cmd not in QUICK_COMMANDS:
        gc.enable()  # tui.start turned it off for the start-up; these run long enough to need it
    if args.cmd in BOX_COMMANDS:
        from tui.core.destination import DestinationError
        if args.cmd == "status":
            head_start(args)
        try:
            target_of(args)
        except DestinationError as exc:
            print("gputui: %s" % exc, file=sys.stderr)
            return EXIT_USAGE
        args.host = args.target.key  # config and ledger key: the alias or user@host:port
        if getattr(args, "remote_python", "") is None:  # the host's `python =` runs the probe too
            args.remote_python = configured_python(args.host)
    if args.log:
        os.close(open_private(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT))  # 0600: a log says which boxes
        logging.basicConfig(filename=args.log, level=logging.DEBUG,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    handlers = {"connect": cmd_connect, "status": cmd_status, "demo": cmd_demo,
                "scenarios": cmd_scenarios, "ledger": cmd_ledger, "doctor": cmd_doctor,
                "checklist": cmd_checklist, "fleet": _fleet, "exporter": _exporter,
                "push": _push, "pull": _pull, "notify": _notify}
    if args.cmd not in handlers:
        parser.print_help()
        return EXIT_USAGE
    scenario = getattr(args, "scenario", None) or getattr(args, "simulate", None)
    if scenario is not None and unknown_scenario(scenario):
        print("gputui: %s" % unknown_scenario(scenario), file=sys.stderr)
        return EXIT_USAGE
    try:
        return handlers[args.cmd](args)
    except KeyboardInterrupt:
        print(_("gputui: interrupted"), file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `gputui status --json | head`: the reader has what it wanted; end quietly, and keep
        # Python from complaining again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


def entry():
    """The console script and `python -m tui`: main(), then a quick exit (process_exit)."""
    from tui.cli.process_exit import exit_now
    exit_now(main())


def _fleet(args):
    from tui.cli.fleet_commands import cmd_fleet
    return cmd_fleet(args)


def _exporter(args):
    from tui.cli.fleet_commands import cmd_exporter
    return cmd_exporter(args)


def _notify(args):
    from tui.cli.notify_cmd import cmd_notify
    return cmd_notify(args)


def _push(args):
    from tui.cli.push_cmd import cmd_push
    return cmd_push(args)


def _pull(args):
    from tui.cli.pull_cmd import cmd_pull
    return cmd_pull(args)


if __name__ == "__main__":
    entry()
