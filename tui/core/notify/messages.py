"""The daemon's message templates in the user's language, pushed to the box with the
notification config (the box renders them: remote_probe/notify/events.py). The English
text here is the box's default word for word (tests check it), so the catalog entries
are the one place the messages are translated."""

from tui.core.i18n import _


def templates() -> dict[str, list[str]]:
    return {
        "finished": [_("%(job)s finished on %(box)s"),
                     _("%(job)s ended (%(cause)s) after %(runtime)s.\n%(evidence)s")],
        "crashed": [_("%(job)s crashed on %(box)s: %(cause)s"),
                    _("%(job)s stopped with an error after %(runtime)s. The box is still billing.\n"
                      "%(evidence)s")],
        "hung": [_("%(job)s looks hung on %(box)s"),
                 _("%(job)s has shown no progress: %(evidence)s\nThe box is still billing.")],
        "idle": [_("GPUs idle on %(box)s"),
                 _("Every GPU has been idle for %(idle_minutes)s min while billing. %(autostop)s")],
        "autostop_countdown": [_("%(box)s will be released in %(minutes)s min"),
                               _("Autostop: %(reason)s. Cancel it in gputui or on the box.")],
        "autostop_done": [_("%(box)s was released by autostop"),
                          _("Autostop ran the release command: %(reason)s.")],
        "budget_80": [_("%(box)s has used 80%% of its budget"), _("Spent %(cost)s of %(budget)s.")],
        "budget_100": [_("%(box)s has used its whole budget"),
                       _("Spent %(cost)s of %(budget)s. The box is still billing.")],
        "budget_80_day": [_("%(box)s has used 80%% of today's budget"),
                          _("Spent %(cost)s of %(budget)s today.")],
        "budget_100_day": [_("%(box)s has used today's whole budget"),
                           _("Spent %(cost)s of %(budget)s today. The box is still billing.")],
        "checkpoint_stale": [_("No new checkpoint from %(job)s on %(box)s"),
                             _("The newest checkpoint is %(age)s old: %(path)s")],
        "balance_low": [_("Provider balance low for %(box)s"), _("Balance left: %(balance)s.")],
        "test": [_("gputui test message from %(box)s"), _("If you can read this, %(channel)s works.")],
        "release_unverified": [_("%(box)s is still up after its release"),
                               _("The release command ran at %(at)s but the box is still up and billing.\n"
                                 "%(evidence)s")],
        "clock": [_("%(box)s: %(clock)s in %(left)s"),
                  _("%(clock)s at %(at)s (%(source)s). %(action)s")],
        "budget_short": [_("%(job)s will not finish within the money left on %(box)s"), _("%(reason)s")],
    }


def causes() -> dict[str, str]:
    return {
        "cuda_oom": _("CUDA out of memory"),
        "nccl_timeout": _("NCCL watchdog timeout"),
        "nccl_error": _("NCCL error"),
        "cuda_error": _("CUDA error"),
        "oom_killed": _("killed by the out-of-memory killer"),
        "segfault": _("segmentation fault"),
        "traceback": _("Python exception"),
        "child_failed": _("a worker process failed"),
        "signal": _("killed by a signal"),
        "exit_status": _("non-zero exit status"),
        "exit_0": _("exit status 0"),
        "interrupted": _("stopped with Ctrl-C"),
        "exited": _("exit status unknown"),
        "ended_early": _("ended before its progress reached the end"),
        "nccl_spin": _("GPU busy at idle power (stuck in a collective)"),
        "stalled": _("VRAM held, GPU idle, no output"),
        "progress_stalled": _("no new step for many times its step time"),
        "sigkill": _("killed (out of memory?)"),
        "gpu_xid": _("GPU fault (NVIDIA Xid)"),
        # a box without /proc (the demo's probe on macOS): alive on tmux's word only
        "no_proc": _("tmux shows it running; without /proc a hang cannot be seen"),
    }
