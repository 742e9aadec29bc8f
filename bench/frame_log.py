"""The benches' frame log, plugged into an unchanged `gputui connect` from outside (issue 19).

Textual picks its driver from TEXTUAL_DRIVER ("module:Class", public Textual API), so a bench
runs the real CLI with

    env = frame_log_env(os.environ, "/tmp/frames")

and this module, imported by the app's own process, logs:

- FILE: for the first frame written to the terminal after each new sample,
  "frame_time seq sample_time received_time" (sample on the box -> screen, and the part of
  it spent before the sample reached the app);
- FILE.view: for each dashboard refresh, "queue_delay refresh_seconds" (sample received ->
  refresh start, and how long refresh_view took).

Production code has no bench hook: the driver is the seam, and the two wrappers below wrap
gputui's own public methods, installed only when this module is imported."""

import os
import sys
import time
from typing import Any, Dict, Mapping, Optional

from textual.drivers.linux_driver import LinuxDriver

HERE = os.path.dirname(os.path.abspath(__file__))
LOG_VAR = "GPUTUI_FRAME_LOG"


def frame_log_env(base: Mapping[str, str], log: str) -> Dict[str, str]:
    """`base` plus what makes a gputui process (started with this env) write the frame log."""
    env = dict(base)
    path = [p for p in (env.get("PYTHONPATH") or "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(path + [HERE])
    env["TEXTUAL_DRIVER"] = "frame_log:FrameLogDriver"
    env[LOG_VAR] = log
    return env


_received = {"t": 0.0}  # wall time the newest sample reached the app


def _install_wrappers() -> None:
    """Wrap the dashboard's sample and refresh, once, in a gputui process only: another Textual
    app given this driver (a bench's floor) must not load gputui's modules (they would count
    in its memory)."""
    if "tui.ui.app" not in sys.modules or getattr(_install_wrappers, "done", False):
        return
    _install_wrappers.done = True  # type: ignore[attr-defined]
    from tui.ui.app import _AppListener
    from tui.ui.screens.dashboard import DashboardScreen
    log = os.environ.get(LOG_VAR)
    on_sample, refresh_view = _AppListener.on_sample, DashboardScreen.refresh_view

    def timed_on_sample(self: Any, sample: dict) -> None:
        _received["t"] = time.time()
        on_sample(self, sample)

    def timed_refresh_view(self: Any) -> None:
        t0 = time.time()
        refresh_view(self)
        if log:
            with open(log + ".view", "a") as f:
                f.write("%.6f %.6f\n" % (t0 - _received["t"], time.time() - t0))
    setattr(_AppListener, "on_sample", timed_on_sample)
    setattr(DashboardScreen, "refresh_view", timed_refresh_view)


class FrameLogDriver(LinuxDriver):
    """The terminal driver, logging the first write after each new sample."""

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        _install_wrappers()  # by now the app has imported its modules
        self.frame_app = app
        self.frame_log = os.environ.get(LOG_VAR)
        self.frame_seq: Optional[Any] = None

    def write(self, data: str) -> None:
        super().write(data)
        box = getattr(self.frame_app, "box", None)
        sample = box.state.sample if box is not None else None
        if self.frame_log and sample and sample.get("seq") != self.frame_seq:
            self.frame_seq = sample.get("seq")
            with open(self.frame_log, "a") as f:
                f.write("%.6f %s %.6f %.6f\n" % (time.time(), sample.get("seq"),
                                                   sample.get("t") or 0, _received["t"]))
