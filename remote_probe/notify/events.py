"""The messages the daemon sends: one template (title, body) per event kind, filled with
the event's fields, and the event's dedup key.

The English templates below are the defaults. The laptop pushes the same templates in
the user's language with the notification config (tui/core/notify/messages.py marks
them for translation, so the catalogs stay the one source); ``render`` uses a pushed
template when it has every field it needs, else the default. Field values come from the
box (job names, last lines) and are sanitized here. Stdlib only.
"""

import re

# kind -> (title, body). Placeholders are %(name)s; every field listed in FIELDS.
TEMPLATES = {
    "finished": ("%(job)s finished on %(box)s",
                 "%(job)s ended (%(cause)s) after %(runtime)s.\n%(evidence)s"),
    "crashed": ("%(job)s crashed on %(box)s: %(cause)s",
                "%(job)s stopped with an error after %(runtime)s. The box is still billing.\n"
                "%(evidence)s"),
    "hung": ("%(job)s looks hung on %(box)s",
             "%(job)s has shown no progress: %(evidence)s\nThe box is still billing."),
    "idle": ("GPUs idle on %(box)s",
             "Every GPU has been idle for %(idle_minutes)s min while billing. %(autostop)s"),
    "autostop_countdown": ("%(box)s will be released in %(minutes)s min",
                           "Autostop: %(reason)s. Cancel it in gputui or on the box."),
    "autostop_done": ("%(box)s was released by autostop", "Autostop ran the release command: %(reason)s."),
    "budget_80": ("%(box)s has used 80%% of its budget", "Spent %(cost)s of %(budget)s."),
    "budget_100": ("%(box)s has used its whole budget", "Spent %(cost)s of %(budget)s. The box is still billing."),
    # the daily budget's wording of the same kinds (an event's "variant": "day")
    "budget_80_day": ("%(box)s has used 80%% of today's budget", "Spent %(cost)s of %(budget)s today."),
    "budget_100_day": ("%(box)s has used today's whole budget",
                       "Spent %(cost)s of %(budget)s today. The box is still billing."),
    "checkpoint_stale": ("No new checkpoint from %(job)s on %(box)s",
                         "The newest checkpoint is %(age)s old: %(path)s"),
    "balance_low": ("Provider balance low for %(box)s", "Balance left: %(balance)s."),
    "test": ("gputui test message from %(box)s", "If you can read this, %(channel)s works."),
    "release_unverified": ("%(box)s is still up after its release",
                           "The release command ran at %(at)s but the box is still up and billing.\n"
                           "%(evidence)s"),
    "clock": ("%(box)s: %(clock)s in %(left)s",
              "%(clock)s at %(at)s (%(source)s). %(action)s"),
    "budget_short": ("%(job)s will not finish within the money left on %(box)s", "%(reason)s"),
}
# Templates that word a kind differently (an event's fields say "variant"); not kinds.
VARIANTS = ("budget_80_day", "budget_100_day")
# What a verdict's cause means (remote_probe/watch/jobwatch.py), in words.
CAUSES = {
    "cuda_oom": "CUDA out of memory",
    "nccl_timeout": "NCCL watchdog timeout",
    "nccl_error": "NCCL error",
    "cuda_error": "CUDA error",
    "oom_killed": "killed by the out-of-memory killer",
    "segfault": "segmentation fault",
    "traceback": "Python exception",
    "child_failed": "a worker process failed",
    "signal": "killed by a signal",
    "exit_status": "non-zero exit status",
    "exit_0": "exit status 0",
    "interrupted": "stopped with Ctrl-C",
    "exited": "exit status unknown",
    "ended_early": "ended before its progress reached the end",
    "nccl_spin": "GPU busy at idle power (stuck in a collective)",
    "stalled": "VRAM held, GPU idle, no output",
    "progress_stalled": "no new step for many times its step time",
    "sigkill": "killed (out of memory?)",
    "gpu_xid": "GPU fault (NVIDIA Xid)",
    "no_proc": "tmux shows it running; without /proc a hang cannot be seen",  # watch_loop
}
FIELD_CHARS = 300
EVIDENCE_CHARS = 1500
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def fields_of(template):
    return set(_PLACEHOLDER.findall(template))


def event_key(kind, box, job=None, run=None, extra=None):
    """One message per event: a job's crash is one event per run (pane + start time),
    an idle spell one per its start, a budget level one per session."""
    parts = [kind, box or "", job or "", str(run or ""), str(extra or "")]
    return "|".join(p.replace("|", "/") for p in parts)


def _clean(value, limit):
    text = "" if value is None else str(value)
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\t", "  "))
    # Keep line breaks (evidence is last lines) but nothing else that steers a terminal.
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return text


def _usable(template, needed):
    if not isinstance(template, (list, tuple)) or len(template) != 2:
        return False
    if not all(isinstance(t, str) for t in template):
        return False
    try:
        for t in template:
            t % {k: "" for k in needed | fields_of(t)}
    except (KeyError, ValueError, TypeError):
        return False
    # A translation may drop a field but must not ask for one the event lacks.
    return (fields_of(template[0]) | fields_of(template[1])) <= needed


def render(kind, fields, templates=None, causes=None):
    """(title, body) for an event. `templates`: {kind: [title, body]} and `causes`:
    {cause: words}, pushed by the laptop in the user's language; unusable ones fall back
    to the English defaults. A known cause code is shown in words."""
    fields = dict(fields)
    code = fields.get("cause")
    if isinstance(code, str) and code in CAUSES:
        words = (causes or {}).get(code)
        fields["cause"] = words if isinstance(words, str) and words else CAUSES[code]
    variant = "%s_%s" % (kind, fields.get("variant"))
    kind = variant if variant in VARIANTS else kind
    default = TEMPLATES.get(kind) or TEMPLATES["test"]
    needed = fields_of(default[0]) | fields_of(default[1])
    chosen = default
    pushed = (templates or {}).get(kind)
    if pushed is not None and _usable(pushed, needed):
        chosen = tuple(pushed)
    values = {}
    for name in needed:
        limit = EVIDENCE_CHARS if name == "evidence" else FIELD_CHARS
        value = fields.get(name)
        values[name] = _clean(value, limit) if value not in (None, "") else "?"
    title = (chosen[0] % values).split("\n", 1)[0][:FIELD_CHARS]
    return title, chosen[1] % values
