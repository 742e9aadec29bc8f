"""Issue 23, "Getting it": a wheel built from the tree, installed with pipx into a fresh
environment (no clone on sys.path), carries its package data and runs `gputui demo`."""

import fcntl
import glob
import json
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.timeout(400)


def sh(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300, **kw)


def install(tmp):
    """Build the wheel and install it into tmp -> (launcher, env, site, "pipx" or "venv", pipx's output)."""
    # built from a copy: setuptools writes build/ inside the tree it builds
    src = str(tmp / "src")
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".*", "build", "dist", "*.egg-info", "__pycache__", "snapshot_report.html"))
    built = sh([sys.executable, "-m", "pip", "wheel", src, "--no-deps", "--no-build-isolation",
                "-w", str(tmp / "dist")])
    assert built.returncode == 0, built.stdout
    (wheel,) = glob.glob(str(tmp / "dist" / "gputui-*.whl"))
    env = dict(os.environ, PIPX_HOME=str(tmp / "pipx"), PIPX_BIN_DIR=str(tmp / "bin"),
               PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", HOME=str(tmp / "home"))
    os.makedirs(env["HOME"])
    env.pop("PYTHONPATH", None)
    # As a user installs it: pipx resolves gputui's dependencies from the package index (CI
    # and this box have one). Where pipx cannot, venv + pip with the dependencies taken from
    # this test's environment as a path (gputui itself is not importable from there: it is an
    # editable install, whose hook a plain path does not run).
    pipx_env = {k: v for k, v in env.items() if k != "PIP_NO_INDEX"}
    done = sh([sys.executable, "-m", "pipx", "install", wheel], env=pipx_env, cwd=str(tmp))
    if done.returncode == 0:
        how, venv = "pipx", glob.glob(str(tmp / "pipx" / "venvs" / "gputui"))[0]
        launcher = str(tmp / "bin" / "gputui")
        (site,) = glob.glob(os.path.join(venv, "lib", "python*", "site-packages"))
    else:
        how, venv = "venv", str(tmp / "venv")
        assert sh([sys.executable, "-m", "venv", venv]).returncode == 0
        got = sh([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--no-deps", wheel],
                 env=env)
        assert got.returncode == 0, got.stdout
        launcher = os.path.join(venv, "bin", "gputui")
        (site,) = glob.glob(os.path.join(venv, "lib", "python*", "site-packages"))
        with open(os.path.join(site, "zz_test_deps.pth"), "w") as f:
            f.write(sysconfig.get_paths()["purelib"] + "\n")
    return launcher, env, site, how, done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """-> (launcher, env, tmp, site-packages, "pipx" or "venv", pipx's output).

    Built and installed once per run, not once per xdist worker that runs a test of this file
    (4 builds and pipx installs were 50 s of CPU); each worker gets its own HOME and cwd."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with open(str(shared / "wheel-install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other workers wait for the first one's install
        record = shared / "wheel-install.json"
        if not record.exists():
            tmp = shared / "wheel-install"
            shutil.rmtree(str(tmp), ignore_errors=True)  # a failed earlier try
            tmp.mkdir()
            record.write_text(json.dumps(install(tmp)))
        launcher, env, site, how, said = json.loads(record.read_text())
    tmp = tmp_path_factory.mktemp("wheel")
    env = dict(env, HOME=str(tmp / "home"))
    os.makedirs(env["HOME"])
    print("installed with", how, said[-500:])
    return launcher, env, tmp, site, how, said


def test_pipx_installs_the_wheel_with_its_dependencies(installed):
    """The README's user install line: pipx, dependencies from the index (not this venv's)."""
    pytest.importorskip("pipx")  # in the test extra; without it the venv route above is all
    _, _, _, site, how, said = installed
    assert how == "pipx", said[-2000:]
    assert not os.path.exists(os.path.join(site, "zz_test_deps.pth"))
    assert glob.glob(os.path.join(site, "textual")) and glob.glob(os.path.join(site, "asyncssh"))


def test_the_wheel_carries_its_package_data(installed):
    _, _, _, site, _, _ = installed
    for rel in ("remote_probe/scenarios/a100x2.json", "remote_probe/dlhook_site/sitecustomize.py",
                "tui/locale/zh_CN/LC_MESSAGES/gputui.po", "tui/ui/app.tcss"):
        assert os.path.exists(os.path.join(site, rel)), rel


def test_installed_gputui_runs_from_its_own_environment(installed):
    launcher, env, tmp, site, _, _ = installed
    where = sh([os.path.join(os.path.dirname(os.path.realpath(launcher)), "python"), "-c",
                "import tui, remote_probe; print(tui.__file__); print(remote_probe.__file__)"],
               env=env, cwd=str(tmp))
    assert where.returncode == 0 and all(p.startswith(site) for p in where.stdout.split()), where.stdout
    scen = sh([launcher, "scenarios"], env=env, cwd=str(tmp))
    assert scen.returncode == 0 and "a100x2" in scen.stdout, scen.stdout
    zh = sh([launcher, "--lang", "zh", "demo", "--help"], env=env, cwd=str(tmp))
    assert zh.returncode == 0 and "模拟" in zh.stdout, zh.stdout  # the .po came along


def test_installed_demo_shows_a_sample(installed):
    pexpect = pytest.importorskip("pexpect")
    launcher, env, tmp, _, _, _ = installed
    child = pexpect.spawn(launcher, ["demo"], env=dict(env, TERM="xterm-256color"), cwd=str(tmp),
                          timeout=90, encoding="utf-8", dimensions=(40, 140))
    try:
        child.expect("A100")  # the simulated GPUs, sampled over the loopback SSH session
        child.expect("%")
    finally:
        child.sendcontrol("q")
        child.sendline("q")
        child.expect(pexpect.EOF, timeout=30)
        child.close(force=True)
