"""Config edits by gputui keep the user's file (issue 20): a rate saved from the `b` dialog
changes that value and nothing else; a host that is not a table is reported, not a TypeError."""

import os

import pytest

from tui.core.config import Config, ConfigError

from tests.e2e.test_app import SIZE, demo_box, wait_for  # noqa: F401  (demo_box is a fixture)

COMMENTED = """\
# my GPU boxes -- keep this comment
[defaults]
currency = "CNY"   # yuan everywhere

[hosts.{host}]
# the 4090 on AutoDL
rate    = 2.58      # per hour, list price
granularity = "hour"
release_command = "shutdown -h now"

[hosts.zzz]          # another box, after
rate = 1.0
"""


def test_rate_save_keeps_comments_order_and_formatting(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(COMMENTED.format(host="mybox"))
    cfg = Config.load(str(path))
    cfg.set_host_values("mybox", rate=3.6, currency="CNY", granularity="hour")  # as `b` saves
    assert path.read_text() == COMMENTED.format(host="mybox").replace("2.58", "3.6")
    assert Config.load(str(path)).host("mybox").rate == 3.6


def test_a_new_host_is_appended_and_the_rest_kept(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(COMMENTED.format(host="mybox"))
    Config.load(str(path)).set_host_values("my new box", rate=1.5)
    text = path.read_text()
    assert text.startswith(COMMENTED.format(host="mybox"))
    assert Config.load(str(path)).host("my new box").rate == 1.5


def test_a_host_that_is_not_a_table_is_reported_and_saving_says_why(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[hosts]\nmybox = 5\n")
    cfg = Config.load(str(path))
    assert cfg.host("mybox").rate is None
    assert any("hosts.mybox is 5, not a table" in p for p in cfg.problems), cfg.problems
    with pytest.raises(ConfigError, match="hosts.mybox is 5, not a table"):
        cfg.set_host_values("mybox", rate=2.0)
    assert path.read_text() == "[hosts]\nmybox = 5\n"
    cfg.set_host_values("otherbox", rate=2.0)  # another host still saves
    assert Config.load(str(path)).host("otherbox").rate == 2.0


def test_saved_config_is_private_whatever_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "sub" / "config.toml"
        Config.load(str(path)).set_host_values("b", rate=1.0)
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(path.parent).st_mode & 0o777 == 0o700


async def test_b_dialog_saves_a_rate_into_a_commented_config(demo_box, tmp_path):  # noqa: F811
    from tui.core.billing.ledger import Ledger
    from tui.ui.app import GputuiApp
    from tui.ui.screens.modals import RateScreen
    host = demo_box.target().host
    path = tmp_path / "config.toml"
    before = COMMENTED.format(host=host)
    path.write_text(before)
    app = GputuiApp(demo_box.target(), simulate="idle", stop_daemon_on_exit=True,
                    config=Config.load(str(path)), ledger=Ledger(str(tmp_path / "l.db")))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.box.state.samples_seen >= 1)
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, RateScreen))
        for _ in range(8):
            await pilot.press("backspace")
        await pilot.press("3", ".", "6", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, RateScreen))
        await wait_for(pilot, lambda: "3.6" in path.read_text())
        await pilot.press("q")
    assert path.read_text() == before.replace("2.58", "3.6")
