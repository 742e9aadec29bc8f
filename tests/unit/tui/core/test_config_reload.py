"""Config edits take effect without a restart and a toast says what changed (issue 23)."""

import os
import time

from tui.core.config import Config, HostConfig
from tui.core.config_reload import ConfigWatcher, host_changes
from tui.remote import ssh
from tui.ui.app import GputuiApp

from tests.support.snapshot_app import FakeSession


def test_host_changes_say_old_and_new():
    old, new = HostConfig(rate=11.96), HostConfig(rate=12.5)
    new.autostop.allowed = True
    assert host_changes(old, new) == ["rate: 11.96 → 12.5", "autostop.allowed: false → true"]
    assert host_changes(old, HostConfig(rate=11.96)) == []
    assert host_changes(HostConfig(), HostConfig(budget_session=50.0)) == ["budget_session: unset → 50.0"]


def test_watcher_sees_each_edit_once(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[hosts.b]\nrate = 1.0\n")
    w = ConfigWatcher(str(path))
    assert w.poll() is None
    path.write_text("[hosts.b]\nrate = 2.0\n")
    os.utime(path, ns=(time.time_ns() + 10**9,) * 2)  # a new mtime even on coarse clocks
    cfg = w.poll()
    assert cfg is not None and cfg.host("b").rate == 2.0
    assert w.poll() is None
    assert ConfigWatcher(None).poll() is None


async def test_the_app_applies_an_edit_and_says_so(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[hosts.snapbox]\nrate = 11.96\n[hosts.snapbox.autostop]\nallowed = false\n')
    target = ssh.Target.parse("snapbox")
    app = GputuiApp(target, host_label="snapbox", config=Config.load(str(path)), ledger=None,
                    session=FakeSession(target))
    app._preflight_started = True
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await pilot.pause(0.2)
        cfg_object = app.box.cfg
        path.write_text('[hosts.snapbox]\nrate = 12.5\n[hosts.snapbox.autostop]\nallowed = true\n')
        os.utime(path, ns=(time.time_ns() + 10**9,) * 2)
        def said_so():
            return any("rate: 11.96 → 12.5" in n.message for n in app._notifications)
        for _ in range(100):  # the app's own timer picks it up; the toast follows the change
            if app.box.cfg.rate == 12.5 and said_so():
                break
            await pilot.pause(0.1)
        assert app.box.cfg is cfg_object  # changed in place: billing and flows see it
        assert app.box.cfg.rate == 12.5 and app.box.cfg.autostop.allowed
        assert app.box.billing.cfg.rate == 12.5
        said = [n.message for n in app._notifications]
        assert any("rate: 11.96 → 12.5" in m and "autostop.allowed: false → true" in m for m in said)
        # a broken edit keeps what was read and says why
        path.write_text("[hosts.snapbox\nrate = \n")
        os.utime(path, ns=(time.time_ns() + 2 * 10**9,) * 2)
        for _ in range(60):
            if any("not valid TOML" in n.message for n in app._notifications):
                break
            await pilot.pause(0.1)
        assert any("not valid TOML" in n.message for n in app._notifications)
        assert app.box.cfg.rate == 12.5
