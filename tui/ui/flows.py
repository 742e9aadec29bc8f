"""What a key does to a box, as functions of (app, box): the dashboard and the fleet screen
call the same ones for the box they show (issue 19).

`app` is the running CockpitApp (dialogs, toasts, the terminal hand-off, the config file);
`box` is the tui.ui.box_context.BoxContext acted on. Flows that wait on a dialog run from a
background action (tui.ui.background), which turns their failures into one notice."""

import asyncio
import time
from typing import TYPE_CHECKING, Any, Iterable, List, Optional

from rich.text import Text

from remote_probe import wire
from tui.core import providers
from tui.core.billing import rates as billing
from tui.core.billing.rates import format_money
from tui.core.config import ConfigError
from tui.core.i18n import _
from tui.ui.box_context import BoxContext
from tui.ui.screens.modals import AutostopScreen, ConfirmScreen, RateScreen

if TYPE_CHECKING:
    from textual.dom import DOMNode

# The running app (tui.ui.app.CockpitApp). Named loosely: app.py imports the screens that
# import this module, and a module here never imports one that imports it back.
CockpitApp = Any


def cockpit(node: "DOMNode") -> CockpitApp:
    """The running app of a screen, as the flows need it (Textual types `node.app` as App)."""
    return node.app


# -- autostop ------------------------------------------------------------------------------
def event_time(event: dict) -> str:
    """'At 14:02: ' before a logged autostop event nobody saw when it happened; '' for news."""
    if not event.get("late") or not isinstance(event.get("t"), (int, float)):
        return ""
    import datetime
    return _("At %s: ") % datetime.datetime.fromtimestamp(event["t"]).strftime("%Y-%m-%d %H:%M")


def autostop_changed(app: CockpitApp, box: BoxContext, status: Optional[dict],
                     event: Optional[dict] = None, events: Iterable[dict] = ()) -> None:
    """A new autostop status for `box`; its countdown and firing reach the user once each."""
    box.autostop = status
    for e in ([event] if event else []) + list(events or []):
        key = (box.host, e.get("event"), e.get("t"))
        if key in app.shown_events:
            continue
        app.shown_events.add(key)
        kind = e.get("event")
        if kind == "grace":
            app.bell()
            app.notify(event_time(e) + e.get("message", _("autostop countdown started")),
                       severity="error", timeout=30, markup=False)
        elif kind == "fired":
            app.notify(event_time(e) + _("Autostop ran `%s` (%s, exit %s)") % (
                e.get("command"), e.get("reason"), e.get("exit")), severity="error",
                timeout=60, markup=False)
        elif kind == "disarmed" and event is not None:
            app.notify(_("Autostop %s") % e.get("reason"), timeout=8, markup=False)
    dashboard = app.dashboard_of(box)
    if dashboard is not None and dashboard.ready:
        dashboard.refresh_billing()


async def autostop_request(app: CockpitApp, box: BoxContext, what: str, **params: Any) -> None:
    """Arm or disarm the probe's autostop; failures go to the worker error handler."""
    assert box.session is not None
    kind = wire.AUTOSTOP_ARM if what == "arm" else wire.AUTOSTOP_DISARM
    reply = await box.session.request(kind, **params)
    autostop_changed(app, box, reply.get("autostop"))
    if kind == wire.AUTOSTOP_ARM:
        app.notify(_("Autostop armed on %s") % box.host, timeout=8, markup=False)


async def arm_or_cancel_autostop(app: CockpitApp, box: BoxContext) -> None:
    """`a`: cancel an armed autostop, or (opt-in per host) ask the conditions and arm it."""
    auto = box.cfg.autostop
    if box.autostop and box.autostop.get("armed"):
        if await app.push_screen_wait(ConfirmScreen(_("Cancel autostop on %s?") % box.host)):
            await autostop_request(app, box, "disarm", reason="cancelled from gputui")
        return
    command = box.billing.preset.release_command
    if not auto.allowed:
        app.notify(_("Autostop is off for %s. It runs a command that stops the box, so it is "
                     "opt-in: add `[hosts.\"%s\".autostop]` with `allowed = true` to %s")
                   % (box.host, box.host, app.config.path), severity="warning",
                   timeout=20, markup=False)
        return
    if not command:
        app.notify(_("No release command known for %s (%s): set release_command in %s")
                   % (box.host, box.billing.preset.name, app.config.path),
                   severity="warning", timeout=20, markup=False)
        return
    from tui.core.checks import release_actions  # with the checklist's verdicts: not for the dashboard (issue 25)
    answer = await app.push_screen_wait(AutostopScreen(
        box.host, release_actions.action_command_text(box.billing.preset), auto.idle_minutes, auto.max_hours, auto.grace_seconds,
        stop_at=auto.deadline, cancel_command=(box.autostop or {}).get("cancel_command")))
    if answer is None:
        return
    deadlines = []
    if answer["max_hours"]:
        deadlines.append(time.time() + answer["max_hours"] * 3600)
    if answer.get("stop_at"):
        deadlines.append(billing.next_clock_time(answer["stop_at"], time.time()))
    deadline = min(deadlines) if deadlines else None
    idle = answer["idle_minutes"] * 60 if answer["idle_minutes"] is not None else None
    threshold = (auto.idle_threshold if auto.idle_threshold is not None
                 else box.cfg.idle_threshold)
    chosen = box.billing.preset.chosen  # the action the user chose (Release screen, config)
    action = {"action": chosen.label} if chosen is not None and command == chosen.command else {}
    if auto.at_budget and (box.cfg.budget_session or box.cfg.budget_day):
        action["at_budget"] = True  # the box releases itself once the budget is spent
    if auto.hung_counts_idle:
        action["hung_counts_idle"] = True  # a hung job does not keep the box billing all night
    await autostop_request(app, box, "arm", command=command, idle_seconds=idle, deadline=deadline,
                           grace=auto.grace_seconds, threshold=threshold, **action)


# -- the provider: which release action, what the box costs (issue 22) ---------------------
def choose_release_action(box: BoxContext, key: str) -> None:
    """Release `box` with its provider's action `key` from now on (this run; `release_action`
    in the config makes it the default): release, autostop, checklist and billing follow."""
    box.cfg.release_action = key
    facts = ((box.state.inventory or {}).get("host") or {}).get("provider") or {}
    box.billing.preset = providers.resolve(facts, box.cfg)


async def read_provider_price(app: CockpitApp, box: BoxContext, fresh: bool = False) -> None:
    """Ask the box for its provider's price and balance (read there, with the key there).
    A failure falls back to the typed rate and is said once per run."""
    assert box.session is not None
    try:
        reply = await box.session.request(wire.PROVIDER_PRICE, timeout=30, fresh=fresh)
        price = reply.get("price")
    except Exception as exc:  # noqa: BLE001 - an older probe, a dropped link: the typed rate stays
        preset = box.billing.preset
        price = {"ok": False, "reason": str(exc) or type(exc).__name__, "fallback": "typed",
                 "provider": preset.key if getattr(preset, "known", False) else None}
    # the wallet, with the token in the laptop's config; urllib.request and http.client (0.7 MB
    # held for the whole run) come in only on an AutoDL box with a token set (or a bad one)
    if box.billing.preset.key == "autodl" and any(app.config.autodl_token(box.cfg)):
        from tui.remote import autodl_wallet
        price = await asyncio.get_running_loop().run_in_executor(
            None, autodl_wallet.price_with_wallet, price, app.config, box.cfg)
    box.billing.set_provider_price(price)
    notice = box.billing.take_price_notice()
    if notice:
        app.notify(notice, severity="warning", timeout=15, markup=False)
    dashboard = app.dashboard_of(box)
    if dashboard is not None and dashboard.ready:
        dashboard.refresh_billing()


# -- rate ----------------------------------------------------------------------------------
async def ask_rate(app: CockpitApp, box: BoxContext) -> bool:
    """`b`: ask what the box costs, apply it, save it in the config. -> whether a rate was set."""
    cfg = box.cfg
    answer = await app.push_screen_wait(RateScreen(box.host, cfg.rate, cfg.currency,
                                                   cfg.granularity))
    if answer is None:
        return False
    rate, currency, granularity = answer
    box.billing.set_rate(rate, currency, granularity)
    try:
        app.config.set_host_values(box.host, rate=rate, currency=currency, granularity=granularity)
        app.notify(_("Rate %s/h saved for %s") % (format_money(rate, currency), box.host),
                   markup=False)
    except ConfigError as exc:  # the rate still applies; only saving it failed
        app.notify(_("Rate used for this session only: %s") % exc, severity="warning",
                   timeout=15, markup=False)
    return True


# -- preflight -----------------------------------------------------------------------------
async def run_preflight(box: BoxContext, smoke: bool = True) -> list:
    """The preflight checks of `box`, kept on it for the doctor screen."""
    from tui.core.checks.preflight import run_checks
    from tui.core.report import doctor_request
    assert box.session is not None
    # a matmul on a GPU someone is training on would disturb the run: only on idle GPUs
    busy = any(r.kind == "C" for r in box.state.proc_rows())
    reply = await box.session.request(wire.PREFLIGHT, timeout=240, retry_lost=True,
                                      **doctor_request(box.cfg, smoke and not busy))
    dyn = dict(enumerate(box.state.gpus))
    box.preflight_checks = run_checks(reply["facts"], box.cfg, box.billing.preset, dyn,
                                      smoke_asked=smoke, gpus_busy=busy)
    return box.preflight_checks


# -- nvitop (`N`): on the box in the real terminal, installed on request into gputui's own
# remote dir; the app suspends like tmux attach and comes back on exit. --------------------
def install_question(host: str, command: str, driverless: Optional[str] = None) -> Text:
    """The confirmation text: what will run, where, and what it will not touch; first, when
    the box has no real NVIDIA driver, that nvitop will not see a GPU there."""
    return Text.assemble(
        (driverless + "\n\n", "bold") if driverless else "",
        _("nvitop is not installed on %s.\n\nInstall it into gputui's own folder on the box? No "
          "root, none of your environments change; removing gputui's folder removes it.") % host
        + "\n\n",
        ("$ " + command, "bold"))


def nvitop_driverless(inventory: dict) -> Optional[str]:
    """Why nvitop cannot show this box's GPUs (it reads the real driver's NVML), or None."""
    backend = inventory.get("backend")
    if backend == "sim":
        return _("This box's GPUs are simulated: nvitop needs the real NVIDIA driver (NVML) and "
                 "will say \"NVML not found\" here.")
    if not inventory.get("gpus"):
        return _("No NVIDIA driver answers on this box: nvitop needs it (NVML) and will show no GPU.")
    return None


async def open_nvitop(app: CockpitApp, box: BoxContext) -> Optional[List[str]]:
    """The whole flow; run it from a background action (it waits on a dialog)."""
    from tui.core import nvitop_commands as nvitop
    from tui.remote.nvitop_install import install_nvitop, nvitop_present
    from tui.ui.terminal_handoff import hand_off
    session, cfg = box.session, box.cfg
    assert session is not None
    python = cfg.python or "python3"
    driverless = nvitop_driverless(box.state.inventory)
    if not await nvitop_present(session, python):
        command = nvitop.install_command(session.remote_dir, python, index_url=cfg.pip_index_url)
        if not await app.push_screen_wait(ConfirmScreen(install_question(box.host, command, driverless))):
            return None
        app.notify(_("Installing nvitop on %s…") % box.host, timeout=10, markup=False)
        ok, said = await install_nvitop(session, python, index_url=cfg.pip_index_url)
        if not ok:
            app.notify(said, severity="error", timeout=30, markup=False)
            return None
    elif driverless:
        app.notify(driverless, severity="warning", timeout=10, markup=False)
    argv = box.terminal_argv(nvitop.run_command(session.remote_dir, python))
    code = await hand_off(app, argv)
    if code not in (0, None):
        said = " ".join(getattr(app, "handoff_said", "").split())[-300:]
        app.notify(_("nvitop exited with %s") % code + (": " + said if said else ""),
                   severity="warning", markup=False, timeout=20)
    return argv


# -- connection notices ---------------------------------------------------------------------
def reconnected(pending: bool, old: str, new: str) -> bool:
    """Say "Reconnected" when the session is live again after `r` or after a drop
    (`pending`), not on the first connect, which the dashboard itself shows."""
    return new == "live" and old != "live" and pending


def connection_changed(app: CockpitApp, box: BoxContext, old: str, new: str) -> None:
    if str(new) == "reconnecting":  # a drop: its end is worth saying too
        box.reconnect_asked = True
    if reconnected(getattr(box, "reconnect_asked", False), str(old), str(new)):
        box.reconnect_asked = False
        app.notify(_("Reconnected to %s") % box.host, timeout=4, markup=False)
