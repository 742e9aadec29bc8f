"""The process table as a tree (issue 23): each process under its parent, like htop's and
nvitop's tree view (torchrun's ranks, a trainer's spawned workers).

Only processes in the table are linked: a process whose parent is not in the table (the
shell, tmux, the launcher that holds no GPU) is a root, and roots that share such a parent
are kept next to each other. Siblings keep the order the table is sorted in. The probe's
parent pids are one sample's view of a box where pids are reused, so the links may form a
cycle: it is broken at its best-sorted process, and no process is drawn twice.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from tui.core.model import ProcRow

MAX_DEPTH = 6  # levels drawn; a deeper process is drawn at this depth, marked "…"
BRANCH, LAST, STEM, GAP, DEEP = "├─ ", "└─ ", "│  ", "   ", "…"


def branch_prefix(lasts: Sequence[bool], cap: int = MAX_DEPTH) -> str:
    """The drawing before a process's command: `lasts` says, for each of its ancestors below
    the root and for itself, whether it is the last of its siblings. A root draws nothing."""
    if not lasts:
        return ""
    cut = len(lasts) > cap
    shown = lasts[-cap:] if cut else lasts
    stems = "".join(GAP if last else STEM for last in shown[:-1])
    return (DEEP if cut else "") + stems + (LAST if shown[-1] else BRANCH)


def _parents(rows: Sequence[ProcRow]) -> Dict[int, Optional[int]]:
    """pid -> its parent's pid when that parent is in the table (and is not itself)."""
    pids = {r.pid for r in rows}
    out: Dict[int, Optional[int]] = {}
    for r in rows:
        if r.pid not in out or out[r.pid] is None:
            ppid = r.ppid if r.local else None
            out[r.pid] = ppid if ppid in pids and ppid != r.pid else None
    return out


def tree_order(rows: Sequence[ProcRow], cap: int = MAX_DEPTH) -> List[ProcRow]:
    """`rows` (already sorted and filtered) in tree order, each with its `tree` drawing.

    A process on two GPUs has two rows: they stay together, drawn alike, its children
    after them."""
    rank: Dict[int, int] = {}  # pid -> position of its first row: the sort order
    by_pid: Dict[int, List[ProcRow]] = {}
    for i, r in enumerate(rows):
        rank.setdefault(r.pid, i)
        by_pid.setdefault(r.pid, []).append(r)
    parent = _parents(rows)
    children: Dict[int, List[int]] = {}
    for pid, p in parent.items():
        if p is not None:
            children.setdefault(p, []).append(pid)
    for kids in children.values():
        kids.sort(key=rank.__getitem__)
    # roots: sorted, but those sharing a parent outside the table kept together, at the
    # place of the group's first
    outside = {r.pid: r.ppid for r in rows if r.local and r.ppid is not None}
    group_rank: Dict[Optional[int], int] = {}
    roots = [pid for pid in sorted(rank, key=rank.__getitem__) if parent[pid] is None]
    for pid in roots:
        group_rank.setdefault(outside.get(pid), rank[pid])
    roots.sort(key=lambda pid: (group_rank[outside.get(pid)] if pid in outside else rank[pid],
                                rank[pid]))
    out: List[ProcRow] = []
    seen = set()

    def walk(root: int) -> None:
        stack: List[Tuple[int, Tuple[bool, ...]]] = [(root, ())]
        while stack:  # depth first without recursion: a chain may be thousands long
            pid, lasts = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            drawing = branch_prefix(lasts, cap)
            out.extend(dataclasses.replace(r, tree=drawing) for r in by_pid[pid])
            kids = [k for k in children.get(pid, ()) if k not in seen]
            for i in range(len(kids) - 1, -1, -1):
                stack.append((kids[i], lasts + (i == len(kids) - 1,)))

    for pid in roots:
        walk(pid)
    # what is left hangs off a cycle (pid reuse): start at its best-sorted process
    for pid in sorted(rank, key=rank.__getitem__):
        if pid not in seen:
            walk(pid)
    return out


def tree_is_flat(rows: Sequence[ProcRow]) -> bool:
    """True when `tree_order`'s rows draw no branch: no process in the table has its parent
    there too (h100x8's ranks, each started by a shell), so `T` changes nothing visible and
    the dashboard says why instead."""
    return not any(r.tree for r in rows)
