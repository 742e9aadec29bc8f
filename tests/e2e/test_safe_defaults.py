"""Safe defaults (issue 10): Enter never trusts a host key; a crash is one line and not 0."""

import os

from tui.remote.session import FAILED
from tui.ui.screens.modals import HostKeyScreen

import pytest

from tui.remote.demo_box import DemoBox

from tests.e2e.test_app import SIZE, untrusted_app, wait_for


@pytest.fixture
async def demo():
    box = await DemoBox().start()
    yield box
    await box.stop()


async def test_enter_on_the_host_key_dialog_does_not_trust(untrusted_sshbox):
    box = untrusted_sshbox
    app = untrusted_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HostKeyScreen))
        await pilot.pause(0.1)
        assert app.screen.focused is not None and app.screen.focused.id == "no"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.box.state.conn_state == FAILED)
        assert box.known_hosts.read_text() == ""
        assert not os.path.exists(box.remote_dir)
        await pilot.press("q")


async def test_a_crash_exits_non_zero_with_one_line_and_the_log(demo, capsys, isolated_dirs):

    from tui.cli import app_exit
    from tui.ui.app import GputuiApp

    from tests.support.hostile import assert_inert

    app = GputuiApp(demo.target(), simulate="a100x2", host_label="demo", stop_daemon_on_exit=True)

    def boom():
        raise RuntimeError("bad name x[/]\x1b[2J from the box")
    with pytest.raises(RuntimeError):
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.box.state.samples_seen >= 1)
            app.call_later(boom)
            await pilot.pause(0.5)
    await app.box.session.close(stop_daemon=True)
    assert isinstance(app.crash, RuntimeError)
    assert app.crash_log and app.crash_log.startswith(str(isolated_dirs))
    logged = open(app.crash_log).read()
    assert "Traceback" in logged and "boom" in logged
    capsys.readouterr()
    assert app_exit(app) == 70
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "RuntimeError: bad name x[/]\\x1b[2J from the box" in err and app.crash_log in err
    assert_inert(err)


async def test_a_nan_rate_in_the_config_is_reported_not_a_crash(demo, tmp_path):
    from tests.e2e.test_app import app_with
    host = demo.target().host
    app, _ = app_with(demo, "idle", tmp_path, {host: {"rate": float("nan"), "budget_day": -1}})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.box.state.samples_seen >= 2)
        await pilot.pause(0.3)
        messages = " ".join(n.message for n in app._notifications)
        assert "rate: nan is not a finite number" in messages and "budget_day" in messages
        assert "No rate set" in str(app.query_one("#billing").render())
        await pilot.press("q")
    assert app.return_code in (0, None) and app.crash is None
