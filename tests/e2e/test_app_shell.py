"""The app's shell: keys remapped from the config, `?` per screen, one path for failures."""

from tui.core.config import Config
from tui.remote import ssh
from tui.ui.app import GputuiApp
from tui.ui.screens.dashboard import DashboardScreen
from tui.ui.screens.doctor import DoctorScreen
from tui.ui.screens.modals import HelpScreen

from tests.support.sshd import free_port
from tests.e2e.test_app import wait_for


def dead_box_app(tmp_path, data=None):
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host deadbox\n  HostName 127.0.0.1\n  Port %d\n" % free_port())
    config = Config(data or {}, path=str(tmp_path / "config.toml"))
    return GputuiApp(ssh.Target.parse("deadbox", ssh_config=str(cfg)), config=config, ledger=None)


def notices(app):
    return [str(n.message) for n in app._notifications]


async def test_keymap_from_config_remaps_a_binding_by_id(tmp_path):
    app = dead_box_app(tmp_path, {"keymap": {"doctor": "D", "help": "f1"}})
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(app.screen, DashboardScreen)
        await pilot.press("d")  # the old key does nothing now
        await pilot.pause(0.1)
        assert isinstance(app.screen, DashboardScreen)
        await pilot.press("D")
        await wait_for(pilot, lambda: isinstance(app.screen, DoctorScreen))
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))


async def test_help_lists_the_keys_of_the_screen_in_front(tmp_path):
    app = dead_box_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = str(app.screen.query_one("#help-text").render())
        assert "Sort" in text and "Release" in text and "Quit" in text
        await pilot.press("escape")
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, DoctorScreen))
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = str(app.screen.query_one("#help-text").render())
        assert "Re-run" in text and "Quit" in text
        assert "Sort" not in text  # the dashboard's keys are not live here


async def test_a_failed_background_action_is_one_plain_notice_not_a_crash(tmp_path):
    """The doctor's preflight fails (no box): one readable notice, the app keeps running."""
    app = dead_box_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("d")
        await wait_for(pilot, lambda: any("Preflight failed" in n for n in notices(app)))
        failed = [n for n in notices(app) if "Preflight failed" in n]
        assert len(failed) == 1 and failed[0].startswith("Preflight failed: not connected to the box")
        assert app.is_running and isinstance(app.screen, DoctorScreen)
        assert not app.screen.query_one("#doctor-busy").display  # the spinner stops


async def test_a_bad_keymap_is_reported_and_ignored(tmp_path):
    app = dead_box_app(tmp_path, {"keymap": {"doctor": 5}})
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: any("keymap.doctor" in n for n in notices(app)))
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, DoctorScreen))


async def test_release_pressed_before_the_session_is_live_waits_for_it(tmp_path):
    """R in the first second: the checklist request waits for the session instead of hanging
    the Release screen on "Looking at the box…" for good."""
    from tui.remote.demo_box import DemoBox
    from tui.ui.demo import demo_app, local_dirs_inside
    from tui.ui.screens.release_screen import ReleaseScreen
    box = await DemoBox().start()
    try:
        with local_dirs_inside(box.dir):
            app = demo_app(box, "a100x2")
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.press("R")  # at once: the probe is not deployed yet
                assert app.box.session.state != "live"
                await wait_for(pilot, lambda: isinstance(app.screen, ReleaseScreen) and app.screen.items,
                               timeout=60)
                head = str(app.screen.query_one("#rel-head").render())
                assert "Looking at the box" not in head
                await app.action_quit()
    finally:
        await box.stop()


async def test_a_stale_dashboard_with_processes_draws(tmp_path):
    """While reconnecting the dashboard is dimmed (opacity); its process rows must still draw.
    (The Line-API process table once left unstyled padding that crashed the dimmed render.)"""
    from remote_probe import wire
    from tui.ui.app import _AppListener
    from tui.ui.widgets.process_table import ProcessTable
    app = dead_box_app(tmp_path)
    listener = _AppListener(app)
    async with app.run_test(size=(120, 40)) as pilot:
        listener.on_inventory({"type": "inventory", "backend": "sim", "gpus": [
            {"index": 0, "name": "NVIDIA A100", "mem_total": 81920, "power_limit": 400}], "host": {}})
        listener.on_sample({"type": "sample", "seq": 1, "t": 1.0, "host": {},
                            "gpus": [wire.gpu_row({"util": 50, "mem_used": 1000})],
                            "procs": [wire.proc_row({"pid": 4242, "gpu": 0, "kind": "C", "gpu_mem": 900,
                                                     "local": True})]})
        await pilot.pause(0.3)
        assert app.box.state.conn_state != "live"
        assert app.query_one("#body").has_class("stale")
        assert app.query_one(ProcessTable).row_count == 1
        app.save_screenshot(path=str(tmp_path))  # a full render of the dimmed screen
        assert app.is_running


async def test_a_sample_landing_while_the_app_quits_is_not_a_crash(tmp_path):
    """The session keeps feeding samples until its channel closes; one that lands after the
    screens are gone must not turn `q` into a crash report."""
    from tui.ui.app import StateChanged
    app = dead_box_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.dashboard.ready)
    app.state_changed(StateChanged(app.box))  # what a late StateChanged does
    app.tick()
    assert app.crash is None
