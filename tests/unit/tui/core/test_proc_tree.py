"""The process tree (issue 23): each GPU process under its parent, siblings in the table's
sort order, orphans and host pids as roots, cycles from pid reuse broken without losing or
doubling a row, and deep chains drawn at a capped depth."""

import pytest

from tui.core.model import ProcRow
from tui.core.jobs.proc_tree import MAX_DEPTH, branch_prefix, tree_is_flat, tree_order


def row(pid, ppid=None, gpu=0, local=True):
    return ProcRow(pid=pid, gpu=gpu, gpu_mem=1.0, kind="C", cpu=1.0, rss=1.0, local=local,
                   host_pid=None, unprotected=False, user="u", cmd="cmd%d" % pid, elapsed=1.0,
                   ppid=ppid)


def drawn(rows):
    return [(r.pid, r.tree) for r in tree_order(rows)]


@pytest.mark.parametrize("rows, expected", [
    # torchrun-style: a parent on the GPU and its ranks, in the table's (sorted) order
    ([row(10, 1), row(12, 10), row(11, 10)], [(10, ""), (12, "├─ "), (11, "└─ ")]),
    # children listed before their parent still land under it
    ([row(11, 10), row(10, 1)], [(10, ""), (11, "└─ ")]),
    # a python -> its DataLoader worker -> that worker's child: stems carry down
    ([row(10, 1), row(11, 10), row(12, 11), row(13, 10)],
     [(10, ""), (11, "├─ "), (12, "│  └─ "), (13, "└─ ")]),
    ([row(10, 1), row(11, 10), row(12, 11)], [(10, ""), (11, "└─ "), (12, "   └─ ")]),
    # orphans: the parent is not in the table (ended, or holds no GPU): roots
    ([row(20, 999), row(21, 5)], [(20, ""), (21, "")]),
    # roots that share a parent outside the table stay together (a launcher's ranks)
    ([row(30, 7), row(40, 8), row(31, 7)], [(30, ""), (31, ""), (40, "")]),
    # host pids (not in this /proc) have no parent we could trust
    ([row(50, None, local=False), row(51, 50, local=False)], [(50, ""), (51, "")]),
    # a process on two GPUs: both rows together, its child after them
    ([row(60, 1, gpu=0), row(61, 60), row(60, 1, gpu=1)],
     [(60, ""), (60, ""), (61, "└─ ")]),
    # its own parent (nonsense on the wire): a root, drawn once
    ([row(70, 70)], [(70, "")]),
])
def test_tree_order(rows, expected):
    assert drawn(rows) == expected


@pytest.mark.parametrize("rows, first", [
    ([row(1, 2), row(2, 1)], 1),                       # two pids that point at each other
    ([row(3, 5), row(4, 3), row(5, 4)], 3),            # a ring of three
    ([row(8, 9), row(9, 8), row(10, 9), row(11, 1)], 11),  # a cycle beside a real root
])
def test_cycles_from_pid_reuse_are_broken_once(rows, first):
    out = tree_order(rows)
    assert sorted(r.pid for r in out) == sorted(r.pid for r in rows)  # nothing lost or doubled
    assert out[0].pid == first and out[0].tree == ""


def test_a_deep_chain_is_capped_and_not_recursive():
    rows = [row(1000 + i, 1000 + i - 1) for i in range(400)]  # a chain as long as the table allows
    out = tree_order(rows)
    assert [r.pid for r in out] == [r.pid for r in rows]
    widths = {len(r.tree) for r in out}
    assert max(widths) == len(branch_prefix([True] * (MAX_DEPTH + 1)))  # never wider than the cap
    assert out[-1].tree.startswith("…")
    assert not out[MAX_DEPTH].tree.startswith("…") and out[MAX_DEPTH + 1].tree.startswith("…")


@pytest.mark.parametrize("lasts, prefix", [
    ((), ""), ((True,), "└─ "), ((False,), "├─ "), ((False, True), "│  └─ "),
    ((True, False), "   ├─ "),
    ((False,) * (MAX_DEPTH + 2), "…" + "│  " * (MAX_DEPTH - 1) + "├─ "),
])
def test_branch_prefix(lasts, prefix):
    assert branch_prefix(lasts) == prefix


def test_tree_of_many_processes_keeps_every_row():
    # a wide tree: one trainer, 499 workers (the probe sends at most 500 rows)
    rows = [row(1, 0)] + [row(i, 1) for i in range(2, 501)]
    out = tree_order(rows)
    assert len(out) == 500 and out[0].pid == 1 and out[-1].tree == "└─ "
    assert all(r.tree == "├─ " for r in out[1:-1])


@pytest.mark.parametrize("rows, flat", [
    ([row(10, 1), row(11, 2), row(12, 3)], True),  # h100x8: each rank started by its own shell
    ([row(10, 7), row(11, 7)], True),              # siblings of a launcher outside the table
    ([row(10, 1), row(11, 10)], False),            # a rank under its torchrun
    ([], True),
])
def test_a_tree_without_branches_is_flat(rows, flat):
    assert tree_is_flat(tree_order(rows)) is flat
