"""Which rule decides "idle" for autostop and idle cost, per sample, and what it says.

- utilization (every GPU reports it): idle when every GPU is under the threshold and no
  compute process runs — the rule autostop has always used (remote_probe/autostop/policy.py).
- no_compute (some GPU reports no utilization: MIG slices, some vGPUs): idle when no
  compute process runs on any GPU. Before this rule, unknown utilization was never idle,
  so autostop could not fire on a MIG box at all.
- A GPU whose only compute processes belong to hung jobs counts as idle only when the
  user opted in (hung_is_idle): a hang is a guess, releasing the box is not undoable.

The window (idle for N minutes) stays autostop's business: this judges one sample.
Stdlib only.
"""

RULE_UTILIZATION = "utilization"
RULE_PROCESSES = "no_compute"  # the wire name (autostop status "rule")
RULE_NO_GPU = "no_gpu"


def idle_verdict(gpus, threshold=5.0, hung_gpus=(), hung_is_idle=False):
    """(idle, rule) for one sample. gpus: [(util or None, compute process count)] per
    GPU, in index order; hung_gpus: indices whose compute processes are all hung jobs."""
    if not gpus:
        return False, RULE_NO_GPU
    rule = RULE_PROCESSES if any(u is None for u, _ in gpus) else RULE_UTILIZATION
    for index, (util, procs) in enumerate(gpus):
        if hung_is_idle and index in hung_gpus:
            continue
        if procs:
            return False, rule
        if rule == RULE_UTILIZATION and util >= threshold:
            return False, rule
    return True, rule


def rule_text(rule):
    """What the UI says about the rule in force (English; the UI translates by key)."""
    return {
        RULE_UTILIZATION: "idle = every GPU under the threshold and no compute process",
        RULE_PROCESSES: "utilization not reported (MIG/vGPU): idle = no compute process",
        RULE_NO_GPU: "no GPU: never idle",
    }[rule]
