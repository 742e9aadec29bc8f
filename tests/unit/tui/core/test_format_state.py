"""Formatting helpers and dashboard state: what the widgets display."""

import pytest

from remote_probe import wire
from tui.core.text import format as fmt
from tui.core.state import DashboardState, ProcRow, short_cmd, sort_procs


@pytest.mark.parametrize("value, text", [(None, "n/a"), (512, "512 MiB"), (1024, "1.0 GiB"), (81920, "80.0 GiB")])
def test_mib(value, text):
    assert fmt.mib(value) == text


@pytest.mark.parametrize("seconds, text", [(None, "n/a"), (-1, "n/a"), (45, "45s"), (723, "12:03"),
                                           (11110, "3:05:10"), (2 * 86400 + 4 * 3600, "2d 04h")])
def test_duration(seconds, text):
    assert fmt.duration(seconds) == text


def test_bar_distinguishes_unknown_from_zero():
    assert fmt.bar(0.0, 4) == "░░░░" and fmt.bar(1.0, 4) == "████" and fmt.bar(None, 4) == "····"
    assert fmt.bar(0.5, 4) == "██░░" and fmt.bar(7, 2) == "██"


def test_graph_has_a_fixed_scale_and_leaves_missing_history_blank():
    assert fmt.graph([100, 0, 50], 5, height=1) == ["  █ ▄"]
    two = fmt.graph([100, 50], 2, height=2)
    assert two == ["█ ", "██"]
    assert fmt.graph([94] * 3, 3, height=1) == ["███"]  # 94% looks like 94%, not like "the max"


def test_short_cmd_drops_the_interpreter_path():
    assert short_cmd("/opt/conda/bin/python3 train.py --bs 64") == "python3 train.py --bs 64"
    assert short_cmd("python train.py") == "python train.py"


def row(pid, **kw):
    base = dict(pid=pid, gpu=0, gpu_mem=None, kind="C", cpu=None, rss=None, local=True, host_pid=None,
                unprotected=False, user="root", cmd="x", elapsed=None)
    base.update(kw)
    return ProcRow(**base)


def test_sort_puts_unknown_values_last_in_either_direction():
    rows = [row(1, gpu_mem=100), row(2, gpu_mem=None), row(3, gpu_mem=300)]
    assert [r.pid for r in sort_procs(rows, "gpu_mem", True)] == [3, 1, 2]
    assert [r.pid for r in sort_procs(rows, "gpu_mem", False)] == [1, 3, 2]


def test_state_joins_process_rows_with_their_facts():
    st = DashboardState("box", clock=lambda: 1000.0)
    st.set_inventory({"gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "mem_total": 81920}]})
    st.add_proc_meta([{"pid": 7, "user": "alice", "cmd": "/usr/bin/python3 train.py", "start": 400.0,
                       "host_pid": 90007}])
    st.add_sample({"type": "sample", "seq": 1, "t": 999.0,
                   "gpus": [wire.gpu_row({"util": 90, "mem_used": 40960})],
                   "procs": [wire.proc_row({"pid": 7, "gpu": 0, "gpu_mem": 40000, "cpu": 99, "rss": 2048}),
                             wire.proc_row({"pid": 99, "gpu": 0, "gpu_mem": 100, "local": 0})],
                   "host": {"cpu": 10}})
    rows = {r.pid: r for r in st.proc_rows()}
    assert rows[7].user == "alice" and rows[7].elapsed == 600.0
    assert rows[7].cmd == "python3 train.py  (host pid 90007)"
    assert not rows[99].local and "not visible in this container" in rows[99].cmd
    assert st.gpu_model() == "1× A100-SXM4-80GB"
    assert st.mem_history[0][-1] == 50.0
    assert st.data_age() == 1.0


def test_gpu_error_keeps_the_last_gpu_values_and_says_why():
    st = DashboardState("box")
    st.set_inventory({"gpus": [{"index": 0, "name": "A100"}]})
    st.add_sample({"type": "sample", "seq": 1, "t": 1.0, "gpus": [wire.gpu_row({"util": 80})],
                   "procs": [], "host": {}})
    st.add_sample({"type": "sample", "seq": 2, "t": 2.0, "gpus": [], "procs": [], "host": {},
                   "gpu_error": "NVML error: GPU is lost"})
    assert st.gpus[0].util == 80
    assert st.no_gpu_reason() == "NVML error: GPU is lost"


def test_age_keeps_old_jobs_cells_still():
    from tui.core.text.format import age
    assert age(5) == "0:05" and age(725) == "12:05"
    assert age(3600 * 3 + 5 * 60 + 59) == "3h05m" and age(86400 * 2 + 3600 * 4) == "2d04h"
    assert age(None) == "n/a" and age(-1) == "n/a"


def test_dataloader_history_of_ended_jobs_is_dropped():
    """15k short-lived training pids must not grow the app (issue 10): history follows live pids."""
    from tui.core.state import DashboardState
    st = DashboardState("box")
    for pid in range(1000, 3000):
        st.add_sample({"seq": pid, "t": pid, "gpus": [], "procs": [], "dl": [{"pid": pid, "wait_fraction": 0.1}]})
    assert list(st.dl_history) == [2999] and list(st.dl) == [2999]
