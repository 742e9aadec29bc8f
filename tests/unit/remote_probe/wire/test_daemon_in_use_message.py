"""A daemon started with one scenario blocks the next command: the message names the flag
that joins it, fully in the user's language (issue 23)."""

from remote_probe import wire
from remote_probe.handlers import in_use_message
from tui.core.i18n import set_language
from tui.remote.bootstrap import explain_exit


def box_says(backend, n):
    return "gputui probe: " + in_use_message({"backend": backend, "version": "1.0"}, n)


def test_names_the_simulate_flag():
    said = explain_exit(wire.EXIT_DAEMON_IN_USE, box_says("sim:a100x2", 1))
    assert "--simulate a100x2" in said and 'simulate = "a100x2"' in said and "1 other live session," in said
    said = explain_exit(wire.EXIT_DAEMON_IN_USE, box_says("auto", 2))
    assert "Drop --simulate" in said and "2 other live sessions" in said


def test_fully_translated_in_chinese():
    set_language("zh")
    try:
        said = explain_exit(wire.EXIT_DAEMON_IN_USE, box_says("sim:a100x2", 1))
    finally:
        set_language("en")
    assert "--simulate a100x2" in said and "模拟器" in said
    assert "left running" not in said and "other live" not in said  # no English from the box


def test_unknown_reason_is_kept():
    said = explain_exit(wire.EXIT_DAEMON_IN_USE, "gputui probe: something else")
    assert "something else" in said
