"""The probe must run on Python 3.8+ with nothing but the standard library."""

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from tui.remote.probe.bundle import build_probe
from tests.support import REPO

ROOT = os.path.join(REPO, "remote_probe")


def test_vermin_says_the_probe_needs_at_most_python_3_8():
    vermin = os.path.join(os.path.dirname(sys.executable), "vermin")
    out = subprocess.run([vermin, "--no-tips", "--violations", "-t=3.8-",
                          "--backport", "typing", ROOT], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    assert out.returncode == 0, out.stdout
    plain = subprocess.run([vermin, "--no-tips", ROOT],
                           stdout=subprocess.PIPE, text=True).stdout
    line = [l for l in plain.splitlines() if l.startswith("Minimum required versions")][0]
    assert "3.8" in line or "3.7" in line or "3.6" in line or "3.5" in line, line


def test_probe_imports_only_the_standard_library():
    allowed_third_party = {"pynvml"}  # bundled in the zipapp
    code = ("import sys, pkgutil, remote_probe, remote_probe.daemon, remote_probe.attach,"
            " remote_probe.backends.sim, remote_probe.backends.smi, remote_probe.backends.nvml;"
            " print('\\n'.join(sorted(m.split('.')[0] for m in sys.modules)))")
    out = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, %r); %s"
                          % (os.path.dirname(ROOT), code)], stdout=subprocess.PIPE, text=True, check=True)
    mods = set(out.stdout.split())
    third = {m for m in mods - set(sys.stdlib_module_names) if not m.startswith("_")}
    assert third <= {"remote_probe"} | allowed_third_party


def old_pythons():
    found = []
    for version in ("3.8", "3.9"):
        exe = shutil.which("python" + version)
        candidates = [exe] if exe and "/shims/" not in exe else []
        candidates += glob.glob(os.path.expanduser("~/.pyenv/versions/%s.*/bin/python%s" % (version, version)))
        for c in candidates:
            if c and os.access(c, os.X_OK):
                found.append(c)
                break
    return found


@pytest.mark.parametrize("python", old_pythons() or [None])
def test_zipapp_runs_on_old_python(tmp_path, python):
    if python is None:
        pytest.skip("no python3.8/3.9 on this machine (vermin covers the syntax check)")
    data, _ = build_probe()
    pyz = tmp_path / "probe.pyz"
    pyz.write_bytes(data)
    r = subprocess.run([python, str(pyz), "once", "--simulate", "a100x2", "--state-dir", str(tmp_path)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["sample"]["gpus"]) == 2
    assert doc["inventory"]["host"]["python"].startswith(os.path.basename(python)[6:])
