"""The laptop's side of the box's notifications (issue 21), on a live session: the
"notify_config" request sent after every connect, and the names of the watch's messages.
The params hold the channels' secrets: they are sent, never logged (only counted)."""

import asyncio
import logging

from remote_probe import wire
from tui.core.i18n import _
from tui.core.session.conn_state import ConnState
from tui.core.notify.wire import notify_config
from tui.remote.probe.client import ProbeError

log = logging.getLogger("gputui.session")

# Named here until every probe's wire knows them (an older probe refuses the requests).
NOTIFY_CONFIG = getattr(wire, "NOTIFY_CONFIG", "notify_config")
NOTIFY_TEST = getattr(wire, "NOTIFY_TEST", "notify_test")
NOTIFY_EVENT = getattr(wire, "NOTIFY_EVENT", "notify_event")
NOTIFY_BILLING = getattr(wire, "NOTIFY_BILLING", "notify_billing")


async def send_notify_config(session) -> None:
    """`session.notify_config` to the daemon (every connect: the config may have changed, the
    daemon may be new); the box's redacted answer lands in `session.notify_reply`, its
    problems (no secret in them) become notices. A daemon that refuses it is logged."""
    try:
        reply = await session.client.request(NOTIFY_CONFIG, **session.notify_config)
    except (ProbeError, asyncio.TimeoutError, OSError) as exc:
        log.info("notify_config not taken by the box: %s", exc)
        return
    session.notify_reply = {"channels": list(reply.get("channels") or []),
                            "problems": list(reply.get("problems") or [])}
    log.info("notify_config: %d channel(s) on the box, %d problem(s)",
             len(session.notify_reply["channels"]), len(session.notify_reply["problems"]))
    for problem in session.notify_reply["problems"]:
        session._notice(_("Notifications: %s") % problem)


def share_billing(session, params) -> bool:
    """Send the box's billing facts (tui.core.notify.wire.billing_params) when this
    connection's daemon does not have them yet: after every connect, and whenever they
    change (a rate typed or read from the provider, a config reload, a new balance).
    Call it as often as you like (the app does, every second). -> whether it sent."""
    if params is None or session.client is None:
        return False
    mark = (session.connects, params)
    if getattr(session, "billing_sent", None) == mark:
        return False
    session.billing_sent = mark
    asyncio.ensure_future(_send_billing(session, params))
    return True


async def _send_billing(session, params) -> None:
    try:
        reply = await session.client.request(NOTIFY_BILLING, **params)
    except ProbeError as exc:  # an older probe refuses the request: not again this connection
        log.info("notify_billing not taken by the box: %s", exc)
        return
    except (asyncio.TimeoutError, OSError) as exc:  # try again on the next call
        log.info("notify_billing not sent: %s", exc)
        session.billing_sent = None
        return
    session.billing_reply = reply


def reload_notify_config(session, data, host, label=None) -> list:
    """After a config reload: the laptop's new channels, quiet hours and `[notify] events`
    reach the box now, not at the next connect. Only when this config says something about
    notifications (a laptop without [notify] never erases the box's channels, as at connect)
    and it changed; kept as the session's notify_config for later reconnects. `label`: the
    name the box's messages use (the one sent at connect, else this). -> the config's
    notification problems when it changed (no secret in them), else []."""
    if session is None:
        return []
    sent_as = (getattr(session, "notify_config", None) or {}).get("box")
    params, problems = notify_config(data, host, sent_as or label or host)
    if params is None or params == getattr(session, "notify_config", None):
        return []
    session.notify_config = params
    if session.client is not None and getattr(session, "state", None) == ConnState.LIVE:
        asyncio.ensure_future(send_notify_config(session))
    return problems
