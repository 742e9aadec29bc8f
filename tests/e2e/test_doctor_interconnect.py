"""`gputui doctor` through a real sshd on the simulator's multi-GPU topologies (issue 22): the
daemon sends the interconnect with the preflight facts, and the laptop judges it."""

import json
import subprocess
import sys

import pytest

from tests.e2e.test_status import box_args


def doctor(box, scenario, *extra):
    r = subprocess.run([sys.executable, "-m", "tui", "doctor", "testbox", "--json", "--simulate", scenario,
                        "--no-smoke", *box_args(box), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert r.stdout, r.stderr
    doc = json.loads(r.stdout)
    return r, doc, {c["name"]: c for c in doc["checks"]}


@pytest.mark.parametrize("scenario, name, verdict, text", [
    ("pcie-degraded", "PCIe GPU 2", "fail", "PCIe trained at x4 of x16"),
    ("pcie-degraded", "GPU-to-GPU", "warn", "6 pairs without P2P (NODE:"),
    ("nvlink-pairs", "GPU-to-GPU", "warn", "NV4: 0-1 2-3"),
    ("a100x2", "GPU-to-GPU", "pass", "P2P between every pair (PHB: 0-1)"),  # (h100x8's 64 jobs: too slow here)
])
def test_doctor_judges_the_interconnect(sshbox, scenario, name, verdict, text):
    r, doc, checks = doctor(sshbox, scenario)
    assert checks[name]["verdict"] == verdict and text in checks[name]["reason"], checks.get(name)
    assert doc["facts"]["topology"]["pairs"], doc["facts"]["topology"]
    if verdict == "fail":
        assert r.returncode == 2 and doc["verdict"] == "fail"


def test_doctor_lists_the_filesystem_of_home_and_cwd(sshbox):
    r, doc, checks = doctor(sshbox, "a100x2")
    disks = [c for n, c in checks.items() if n.startswith("disk ")]
    assert any("home (" in c["reason"] for c in disks), disks
    assert {f["role"] for f in doc["facts"]["filesystems"]} >= {"home", "cwd"}
