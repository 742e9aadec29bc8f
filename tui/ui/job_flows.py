"""Flows on one watched job (issue 21), as functions of (app, box) like tui.ui.flows:
"release when this job ends" arms the probe's autostop with when_job_done = the job's id, so
the box runs the release command itself after the job ends (after the grace, only when no
other GPU job runs) with the laptop closed."""

from typing import Optional

from rich.text import Text

from tui.core.i18n import _
from tui.core.model import JobState, JobWatch
from tui.ui.box_context import BoxContext
from tui.ui.flows import CockpitApp, autostop_request
from tui.ui.screens.modals import ConfirmScreen


def release_question(host: str, job: JobWatch, command: str, grace: Optional[float]) -> Text:
    """The confirmation: which job, when, and the exact command the box will run."""
    return Text.assemble(
        _("Release %s when job '%s' ends?") % (host, job.name or job.id) + "\n\n",
        _("After it ends and a grace of %ds, and only when no other GPU job runs, the box runs "
          "(with the laptop closed too):") % int(grace or 0) + "\n\n",
        ("$ " + command, "bold"))


async def release_when_done(app: CockpitApp, box: BoxContext, job: Optional[JobWatch]) -> bool:
    """Arm autostop for `job`'s end, after the same checks and confirmation as `a`.
    -> whether it was armed."""
    if job is None:
        app.notify(_("No watched job here: the box reports progress for tmux panes, GPU "
                     "processes and long-running python jobs"), severity="warning", timeout=10)
        return False
    if job.state not in (JobState.RUNNING, JobState.WAITING, JobState.HUNG):
        app.notify(_("Job '%s' is not running (%s)") % (job.name or job.id,
                                                       job.state.label if job.state else "?"),
                   severity="warning", timeout=10)
        return False
    auto = box.cfg.autostop
    command = box.billing.preset.release_command
    if not auto.allowed:
        app.notify(_("Autostop is off for %s. It runs a command that stops the box, so it is "
                     "opt-in: add `[hosts.\"%s\".autostop]` with `allowed = true` to %s")
                   % (box.host, box.host, app.config.path), severity="warning",
                   timeout=20, markup=False)
        return False
    if not command:
        app.notify(_("No release command known for %s (%s): set release_command in %s")
                   % (box.host, box.billing.preset.name, app.config.path),
                   severity="warning", timeout=20, markup=False)
        return False
    if not await app.push_screen_wait(ConfirmScreen(
            release_question(box.host, job, command, auto.grace_seconds))):
        return False
    threshold = auto.idle_threshold if auto.idle_threshold is not None else box.cfg.idle_threshold
    idle = auto.idle_minutes * 60 if auto.idle_minutes else None  # the idle rule stays in force
    await autostop_request(app, box, "arm", command=command, idle_seconds=idle,
                           grace=auto.grace_seconds, threshold=threshold, when_job_done=job.id)
    return True
