"""The benchmarks still run against the code they measure: three of them imported modules
that the move into tui/core|remote|ui (issue 15) had renamed, and nobody noticed until a
figure was wanted."""

import ast
import glob
import importlib
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHES = sorted(glob.glob(os.path.join(ROOT, "bench", "*.py")))


def own_imports(path):
    """(module, name or None) for every import of gputui's own packages in the file."""
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and \
                node.module.split(".")[0] in ("tui", "remote_probe", "tests"):
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("tui", "remote_probe"):
                    yield alias.name, None


@pytest.mark.parametrize("path", BENCHES, ids=os.path.basename)
def test_every_import_of_our_code_resolves(path):
    for module, name in own_imports(path):
        mod = importlib.import_module(module)
        if name is not None and not hasattr(mod, name):
            importlib.import_module("%s.%s" % (module, name))  # a submodule, or ImportError


@pytest.mark.parametrize("path", [p for p in BENCHES if "argparse" in open(p).read()],
                         ids=os.path.basename)
def test_help_runs(path):
    r = subprocess.run([sys.executable, path, "--help"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0 and "usage" in r.stdout, r.stderr
