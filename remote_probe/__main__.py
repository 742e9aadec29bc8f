"""Command line of the probe (runs on the box):

    probe.pyz attach  [--state-dir D] [--simulate S]   bridge stdio to the daemon
    probe.pyz daemon  [--state-dir D] [--simulate S]   the sampler itself (spawned by attach)
    probe.pyz once    [--simulate S]                   print one sample as JSON
    probe.pyz supervise [--state-dir D] [--simulate S] restart the daemon while autostop is armed
    probe.pyz scenarios                                list shipped simulator scenarios
"""

import argparse
import os
import sys
import traceback

from remote_probe import __version__, wire


def main(argv=None):
    if sys.version_info < wire.MIN_PYTHON:
        print("gputui probe needs Python %d.%d+" % wire.MIN_PYTHON, file=sys.stderr)
        return wire.EXIT_PYTHON_TOO_OLD
    parser = argparse.ArgumentParser(prog="gputui-probe")
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="cmd")
    for name in ("attach", "daemon", "once", "supervise"):
        p = sub.add_parser(name)
        p.add_argument("--state-dir", default=None)
        p.add_argument("--simulate", default=None, metavar="SCENARIO")
        p.add_argument("--interval", type=float, default=1.0, help=argparse.SUPPRESS)
    sub.add_parser("scenarios")
    p = sub.add_parser("autostop-cancel", help="cancel gputui's autostop on this box")
    p.add_argument("--state-dir", default=None)
    args = parser.parse_args(argv)
    if not args.cmd:
        parser.print_help()
        return wire.EXIT_BAD_COMMAND
    if args.cmd == "scenarios":
        from remote_probe.scenario_files import scenario_names
        print("\n".join(scenario_names()))
        return wire.EXIT_OK
    from remote_probe import attach
    from remote_probe.paths import default_state_dir
    state_dir = os.path.abspath(os.path.expanduser(args.state_dir or default_state_dir()))
    if args.cmd == "attach":
        return attach.run_attach(state_dir, args.simulate)
    if args.cmd == "once":
        return attach.run_once(state_dir, args.simulate)
    if args.cmd == "autostop-cancel":
        return attach.cancel_autostop(state_dir)
    import logging
    if args.cmd == "supervise":
        from remote_probe.autostop.supervise import run_supervisor
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
        return run_supervisor(state_dir, attach.spawn_daemon, args.simulate)
    from remote_probe import daemon  # only the daemon itself pays for asyncio and logging
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    return daemon.run_daemon(state_dir, args.simulate, args.interval)


def entry():
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(wire.EXIT_INTERRUPTED)
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        print("gputui probe crashed (probe %s, python %s)" % (__version__, sys.version.split()[0]),
              file=sys.stderr)
        sys.exit(wire.EXIT_PROBE_CRASHED)


if __name__ == "__main__":
    entry()
