"""The dependency policy (docs/dependencies.md) as far as it can be checked without installing:
every runtime dependency has a `>=` bound that .ci/lower_bounds pins exactly, and every library
the laptop side imports is one of them (rich was imported everywhere and declared nowhere: its
bound was whatever textual allowed, never tested)."""

import ast
import importlib.metadata
import os
import re
import subprocess
import sys

import pytest

from tests.support import REPO

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib


def project():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_runtime_dependency_is_pinned_at_its_bound_by_the_lower_bounds_run():
    out = subprocess.run([sys.executable, os.path.join(REPO, ".ci", "lower_bounds"), "--print"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    pins = out.stdout.split("\n")[:-1]
    deps = project()["dependencies"]
    assert len(pins) == len(deps), (pins, deps)
    for pin, dep in zip(pins, deps):
        name, version = pin.split(" ;")[0].split("==")
        assert re.fullmatch(r"\d+(\.\d+){2,}", version), (pin, "a bound names a whole release: X.Y.Z")
        assert dep.startswith(name) or canonical(dep).startswith(name), (pin, dep)


def optional(node, parents):
    """An import inside `try: ... except ImportError` is one gputui does without."""
    for p in parents:
        if isinstance(p, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in p.handlers):
            return True
    return False


def imported_libraries(root):
    """Top-level names of the modules tui/ imports for sure (not stdlib, not gputui's own)."""
    names = set()
    for d, _dirs, files in os.walk(root):
        for f in files:
            if not f.endswith(".py"):
                continue
            tree = ast.parse(open(os.path.join(d, f), encoding="utf-8").read())
            stack = [(tree, [])]
            while stack:
                node, parents = stack.pop()
                found = []
                if isinstance(node, ast.Import):
                    found = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found = [node.module]
                if found and not optional(node, parents):
                    names.update(n.split(".")[0] for n in found)
                stack.extend((child, parents + [node]) for child in ast.iter_child_nodes(node))
    return {n for n in names if n not in sys.stdlib_module_names and n not in ("tui", "remote_probe")}


@pytest.mark.skipif(sys.version_info < (3, 10), reason="sys.stdlib_module_names and "
                    "packages_distributions are 3.10's (the main suite runs it)")
def test_every_library_the_laptop_imports_is_a_declared_dependency():
    declared = {canonical(re.match(r"[A-Za-z0-9._-]+", d).group(0)) for d in project()["dependencies"]}
    dists = importlib.metadata.packages_distributions()
    missing = {}
    for module in sorted(imported_libraries(os.path.join(REPO, "tui"))):
        owners = {canonical(d) for d in dists.get(module, [module])}
        if not owners & declared:
            missing[module] = sorted(owners)
    assert not missing, "imported by tui/ but not in [project].dependencies: %s" % missing
