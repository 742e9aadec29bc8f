"""Issue 23: with `PermitTTY no` on the box, attach said only "exited with 255"; the toast now
carries ssh's own reason, which the app's redraw used to paint over."""

import pytest

from tui.core.session.handoff_reason import call_keeping_stderr, handoff_failure

from tests.support.pty_fixtures import me, start_box, stop_box

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def no_tty_box(tmp_path_factory):
    box = start_box(tmp_path_factory.mktemp("nottybox"), [me()], extra_config="PermitTTY no")
    yield box
    stop_box(box)


def test_attach_failure_names_ssh_s_own_reason(no_tty_box):
    argv = ["ssh", "-F", no_tty_box.ssh_config, "-tt", "testbox", "tmux attach -t nope"]
    code, said = call_keeping_stderr(argv)
    msg = handoff_failure(argv, code, said)
    assert code != 0 and msg is not None
    assert "PTY allocation request failed" in msg, msg
    assert msg.startswith("`ssh -F ")


def test_no_toast_when_it_ended_well():
    assert handoff_failure(["true"], 0, "noise") is None
    assert "exited with 255" in handoff_failure(["ssh", "h"], 255, "")
