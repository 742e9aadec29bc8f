"""Safe defaults (issue 10): Enter never trusts a host key; a crash is one line and not 0."""

import os

from tui.remote.session import FAILED
from tui.ui.screens.modals import HostKeyScreen

from .test_app import SIZE, untrusted_app, wait_for


async def test_enter_on_the_host_key_dialog_does_not_trust(untrusted_sshbox):
    box = untrusted_sshbox
    app = untrusted_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HostKeyScreen))
        await pilot.pause(0.1)
        assert app.screen.focused is not None and app.screen.focused.id == "no"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.state.conn_state == FAILED)
        assert box.known_hosts.read_text() == ""
        assert not os.path.exists(box.remote_dir)
        await pilot.press("q")
