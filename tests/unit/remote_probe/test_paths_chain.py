"""remote_probe.paths.path_problem: which directories may hold the probe, table-driven on a
real tree (issue 20). Root-owned parts stand in for the system's; the caller is `uid`."""

import os

import pytest

from remote_probe import paths

ME = os.getuid()
OTHER = 54321  # no such user: another account


def build(root, spec):
    """spec: [(relative path, kind, mode, owner)] kind: dir | link:TARGET."""
    for rel, kind, mode, owner in spec:
        p = os.path.join(str(root), rel)
        if kind == "dir":
            os.mkdir(p)
            os.chmod(p, mode)
        else:
            os.symlink(kind.split(":", 1)[1], p)
        os.lchown(p, owner, -1)


CASES = [
    ("plain private dir", [("a", "dir", 0o755, ME), ("a/b", "dir", 0o700, ME)], "a/b", None),
    ("our own 0755 dir (narrowed later)", [("a", "dir", 0o755, ME)], "a", None),
    ("sticky world-writable parent", [("t", "dir", 0o1777, ME), ("t/g", "dir", 0o700, ME)], "t/g", None),
    ("world-writable parent", [("t", "dir", 0o777, ME), ("t/g", "dir", 0o700, ME)], "t/g",
     "can be written by other users"),
    ("the dir itself shared (sticky)", [("t", "dir", 0o1777, ME)], "t", "can be written by other users"),
    ("another user's dir", [("a", "dir", 0o755, OTHER)], "a", "belongs to uid 54321"),
    ("under another user's dir", [("a", "dir", 0o755, OTHER), ("a/b", "dir", 0o700, ME)], "a/b",
     "belongs to uid 54321"),
    ("symlink of another user", [("real", "dir", 0o700, ME), ("l", "link:real", 0, OTHER)], "l",
     "is a symbolic link owned by uid 54321"),
    ("our own symlink", [("real", "dir", 0o700, ME), ("l", "link:real", 0, ME)], "l", None),
    ("our symlink to another's dir", [("real", "dir", 0o700, OTHER), ("l", "link:real", 0, ME)], "l",
     "belongs to uid 54321"),
    ("a file, not a dir", [], "f", "is not a directory"),
]


@pytest.mark.skipif(os.geteuid() != 0, reason="lchown to another uid needs root")
@pytest.mark.parametrize("name,spec,target,why", CASES, ids=[c[0] for c in CASES])
def test_path_problem(tmp_path, name, spec, target, why):
    (tmp_path / "f").write_text("x")
    build(tmp_path, spec)
    got = paths.path_problem(str(tmp_path / target), uid=ME)
    if why is None:
        assert got is None
    else:
        assert got and why in got, got


@pytest.mark.skipif(os.geteuid() != 0, reason="lchown to another uid needs root")
def test_ensure_private_dir_refuses_and_narrows(tmp_path):
    build(tmp_path, [("mine", "dir", 0o755, ME), ("real", "dir", 0o700, OTHER),
                     ("l", "link:real", 0, OTHER)])
    paths.ensure_private_dir(str(tmp_path / "mine"))
    assert os.stat(tmp_path / "mine").st_mode & 0o777 == 0o700
    with pytest.raises(paths.UnsafePath, match="symbolic link owned by"):
        paths.ensure_private_dir(str(tmp_path / "l"))
    made = paths.ensure_private_dir(str(tmp_path / "new" / "deeper"))
    assert os.stat(made).st_mode & 0o777 == 0o700
    assert os.stat(tmp_path / "new").st_mode & 0o777 == 0o700
