"""`gputui notify test [HOST]`: a test message through every configured channel, and which
failed and why. With HOST the box's daemon sends it (the path the real notifications take,
with the laptop closed): the config's channels are pushed first, then "notify_test". Without
HOST the laptop sends it with Apprise to the global `[notify] urls`. Channels are shown
redacted; no secret is printed or logged."""

import asyncio
import socket
import sys
from typing import Any, Dict, List, Tuple

from tui.core.text.boxtext import visible
from tui.core.i18n import _
from tui.core.notify.messages import templates
from tui.core.notify.settings import notify_settings
from tui.core.notify.wire import config_params

EXIT_OK, EXIT_FAILED, EXIT_CONNECT, EXIT_USAGE = 0, 1, 2, 64


def add_parser(sub: Any) -> None:
    p = sub.add_parser("notify", help=_("notifications: `notify test [HOST]` sends a test message"),
                       description=_("Notifications sent by each box's daemon (Apprise-style URLs "
                                     "in [notify] urls and [hosts.NAME.notify])."))
    ps = p.add_subparsers(dest="notify_cmd", metavar="ACTION", help=_("test: send a test message"))
    t = ps.add_parser("test", help=_("send a test message through every channel; exit 1 if one failed"),
                      description=_("Send a test message through every configured channel and say "
                                    "which failed and why. With HOST the box sends it; without, "
                                    "this laptop sends it to the global [notify] urls."))
    t.add_argument("host", nargs="?", metavar="HOST", help=_("the box whose daemon sends the test"))
    t.add_argument("--simulate", metavar="SCENARIO", help=_("use the probe's GPU simulator"))
    t.add_argument("--ssh-config", metavar="FILE", help=_("read this ssh config instead of ~/.ssh/config"))
    t.add_argument("--remote-dir", metavar="DIR", help=_("where the probe lives on the box"))
    t.add_argument("--remote-python", metavar="PATH", help=_("the python to run the probe with on the box"))


def print_results(results: List[Tuple[str, bool, str]]) -> int:
    """One line per channel: ✓/✗, the redacted channel, why. -> the exit code."""
    for shown, ok, reason in results:
        print(("✓ " if ok else "✗ ") + visible(shown) + (": " if reason else "") + visible(reason))
    failed = sum(1 for _s, ok, _r in results if not ok)
    print(_("%d of %d channels failed") % (failed, len(results)) if failed
          else _("every channel works (%d)") % len(results))
    return EXIT_FAILED if failed else EXIT_OK


def laptop_test(data: Any) -> int:
    """Send from this laptop through Apprise to the global channels."""
    from remote_probe.wire import channel_urls
    from tui.core.notify.send import send_all
    settings, problems = notify_settings(data, None)
    for problem in problems:
        print(_("gputui: config: %s") % visible(problem), file=sys.stderr)
    if not settings.urls:
        print(_("gputui: no channels in [notify] urls of the config"), file=sys.stderr)
        return EXIT_FAILED
    title_t, body_t = templates()["test"]
    box = socket.gethostname()
    results = []
    for url in settings.urls:
        shown = channel_urls.redact_url(url)
        (r,) = send_all([url], title_t % {"box": box}, body_t % {"channel": shown})
        results.append((r.shown, r.ok, r.reason))
    return print_results(results)


async def box_test(target: Any, args: Any, params: Dict[str, Any]) -> Dict[str, Any]:
    """Push this config's channels to the box's daemon, then ask it to send the test."""
    from tui.remote.notify_push import NOTIFY_TEST, send_notify_config
    from tui.remote.session import RemoteSession
    session = RemoteSession(target, simulate=args.simulate, remote_dir=args.remote_dir,
                            remote_python=args.remote_python, notify_config=params)
    session.conn = await session._connect_ssh()
    try:
        session.process, session.client = await session._start_probe()
        await send_notify_config(session)
        return await session.client.request(NOTIFY_TEST, timeout=120)
    finally:
        await session.close()


def cmd_notify(args: Any) -> int:
    from tui.cli.contact import config_for
    if getattr(args, "notify_cmd", None) != "test":
        print(_("gputui: say `gputui notify test [HOST]`"), file=sys.stderr)
        return EXIT_USAGE
    if not args.host:
        from tui.core.config import Config
        return laptop_test(Config.load().data)
    from tui.remote import ssh
    try:
        target = ssh.Target.parse(args.host, ssh_config=args.ssh_config)
    except (ssh.ConnectError, ValueError) as exc:
        print("gputui: %s" % visible(exc), file=sys.stderr)
        return EXIT_USAGE
    cfg, _host_cfg = config_for(target.key)
    settings, problems = notify_settings(cfg.data, target.key)
    for problem in problems:
        print(_("gputui: config: %s") % visible(problem), file=sys.stderr)
    if not settings.urls:
        print(_("gputui: no channels configured for %s ([notify] urls, [hosts.%s.notify])")
              % (visible(target.key), visible(target.key)), file=sys.stderr)
        return EXIT_FAILED
    try:
        reply = asyncio.run(box_test(target, args, config_params(settings, target.key)))
    except Exception as exc:  # connect and probe failures: one line, never a traceback with params
        print("gputui: %s: %s" % (exc.__class__.__name__, visible(exc)), file=sys.stderr)
        return EXIT_CONNECT
    results = [(str(r.get("channel") or "?"), r.get("ok") is True, str(r.get("reason") or ""))
               for r in reply.get("results") or () if isinstance(r, dict)]
    if not results:
        print(_("gputui: the box has no channel to test"), file=sys.stderr)
        return EXIT_FAILED
    return print_results(results)
