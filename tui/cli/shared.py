"""What every command shares: exit codes, the two ways of printing (text shown inert,
JSON kept JSON), the box a command names, and running one remote operation so that any
failure is one line on stderr."""

import json
import sys

from tui.core.text.boxtext import json_safe, visible
from tui.core.i18n import N_, _

EXIT_OK, EXIT_FAILED, EXIT_CONNECT, EXIT_USAGE = 0, 1, 2, 64
VERDICT_WORDS = {"pass": N_("PASS"), "warn": N_("WARN"), "fail": N_("FAIL")}  # text output only


def emit(text):
    """Every line of human output: nothing from the box can act on the terminal."""
    print(visible(text, keep_newlines=True))


def emit_json(doc):
    """JSON stays JSON: escapes are json's own, and never a bare NaN."""
    print(json.dumps(json_safe(doc), indent=1, allow_nan=False))


def warn(text):
    print("gputui: %s" % visible(text), file=sys.stderr)


def target_of(args):
    if getattr(args, "target", None) is None:
        from tui.remote import ssh  # asyncssh: only for the commands that reach a box
        args.target = ssh.Target.parse(args.host, ssh_config=args.ssh_config)
    return args.target


def asker_of(args):
    from tui.remote.asker import TerminalAsker
    return TerminalAsker(args.host)


async def _terminal_trust(exc):
    """`gputui status` on a terminal asks like ssh does; without one it refuses."""
    if not sys.stdin.isatty():
        return False
    print(visible(exc, keep_newlines=True), file=sys.stderr)
    import asyncio
    answer = await asyncio.get_running_loop().run_in_executor(
        None, lambda: input(_("Trust this host key and continue (yes/no)? ")))
    return answer.strip().lower() in ("y", "yes", _("yes"))


async def open_session(args, files=False):
    """A live session to the command's box, opened the way every box command opens it: the
    terminal's host-key prompt and password asker, the session's notices printed. files:
    the command moves files (SFTP is started beside the probe)."""
    from tui.remote.session import RemoteSession
    session = RemoteSession(target_of(args), simulate=args.simulate, remote_dir=args.remote_dir,
                            ask_trust=_terminal_trust, remote_python=args.remote_python,
                            asker=asker_of(args))
    session.files_early = files
    await session.open()
    print_notices(session.notices)
    return session


def preload(modules):
    """Import `modules` in a thread while this one waits on the network, and return what
    waits for it. A warm `status` is mostly round trips (key exchange, auth, the channel,
    the daemon's reply) that leave the CPU idle; what runs after them (the report, the
    ledger, the billing clock) is loaded meanwhile instead of after the reply (issue 26).
    The switch interval is a millisecond meanwhile, so a reply that comes in while the
    thread imports waits at most that long for the interpreter, not the default 5 ms."""
    import importlib
    import threading
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, 0.001))

    def load():
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the command's own import raises it where it is reported
                pass
    thread = threading.Thread(target=load, name="gputui-preload", daemon=True)
    thread.start()

    def wait():
        thread.join()
        sys.setswitchinterval(interval)
    return wait


def run_remote(coro):
    """Run one remote operation; any failure becomes one line on stderr and None."""
    import asyncio  # here, not at the top: `status` starts its head start before it (issue 38)
    from tui.remote import ssh
    from tui.remote.session import FatalError
    try:
        return asyncio.run(coro)
    except (ssh.ConnectError, FatalError) as exc:
        warn(exc)
    except Exception as exc:  # probe errors and timeouts: one line, not a traceback
        warn("%s: %s" % (exc.__class__.__name__, exc))
    return None


def print_notices(notices):
    """Fallbacks taken on the box (terminal transport, another probe dir), on stderr."""
    for notice in notices or ():
        print("gputui: %s" % notice, file=sys.stderr)
