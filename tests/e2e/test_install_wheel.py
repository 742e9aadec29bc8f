"""Issue 23, "Getting it": a wheel built from the tree, installed with pipx into a fresh
environment (no clone on sys.path), carries its package data and runs `gputui demo`.

Issue 37, "a fresh install that is quiet": that install resolves the newest releases of every
dependency from the package index, as a user's does, and the commands a user runs first print
nothing on stderr there (a library's deprecation warning on every command was ten lines of
noise). This is the newest-releases half of docs/dependencies.md; .ci/lower_bounds is the other."""

import fcntl
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time

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
            start = time.monotonic()
            done = install(tmp)
            record.write_text(json.dumps(done + (round(time.monotonic() - start, 1),)))
        launcher, env, site, how, said, took = json.loads(record.read_text())
    tmp = tmp_path_factory.mktemp("wheel")
    env = dict(env, HOME=str(tmp / "home"))
    os.makedirs(env["HOME"])
    print("installed with", how, "in %.1f s (build + install)" % took, said[-500:])
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


# --- Issue 37: a fresh install is quiet ----------------------------------------------------

def user_env():
    """This test's environment as a user's shell has it: its HOME (user_world's, where one is
    set), its own gputui dirs (conftest), no PYTHONPATH into the clone, no -W switches."""
    env = dict(os.environ)
    for name in ("PYTHONPATH", "PYTHONWARNINGS", "PYTHONDEVMODE"):
        env.pop(name, None)
    return env


def resolved_versions(launcher):
    """-> {distribution: version} of the environment pipx made (what the index gave today)."""
    python = os.path.join(os.path.dirname(os.path.realpath(launcher)), "python")
    out = subprocess.run([python, "-c", "import importlib.metadata as m, json; print(json.dumps("
                          "{d.metadata['Name'].lower(): d.version for d in m.distributions()}))"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def run_quietly(launcher, argv, env, cwd, json_out=False, ok=(0,), stderr_may=None, timeout=120):
    """Run `gputui argv` -> a complaint (str) or None. A complaint quotes stderr whole."""
    r = subprocess.run([launcher] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=env, cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)
    said = "gputui %s -> exit %d" % (" ".join(argv), r.returncode)
    noisy = r.stderr if stderr_may is None else "".join(
        line for line in r.stderr.splitlines(True) if not stderr_may(line))
    if noisy:
        return "%s printed on stderr:\n%s" % (said, r.stderr)
    if r.returncode not in ok:
        return "%s (wanted %s); stdout:\n%s" % (said, ok, r.stdout[-2000:])
    if json_out:
        try:
            json.loads(r.stdout)
        except ValueError as e:
            return "%s: stdout is not JSON (%s):\n%s" % (said, e, r.stdout[-2000:])
    return None


PYTHON_NOISE = re.compile(r"\w+Warning: |Traceback \(most recent call last\)|[Dd]eprecat")


def assert_all_quiet(complaints, versions):
    complaints = [c for c in complaints if c]
    assert not complaints, "\n\n".join(complaints) + "\n\nresolved fresh: " + ", ".join(
        "%s %s" % kv for kv in sorted(versions.items()))


# The help of every command (what a user reads first), and the commands that need no box.
OFFLINE = [
    (["--version"], {}),
    (["--help"], {}),
    (["scenarios"], {}),
    (["ledger"], {}),
    (["ledger", "--json"], {"json_out": True}),
    (["fleet", "--json"], {"json_out": True}),
    (["fleet", "--check"], {}),
] + [([cmd, "--help"], {}) for cmd in (
    "connect", "status", "doctor", "checklist", "demo", "scenarios", "ledger", "fleet", "exporter",
    "push", "pull", "notify")] + [(["--lang", "zh", "demo", "--help"], {})]


def test_a_fresh_install_is_quiet_without_a_box(installed):
    """Newest releases of every dependency (pipx resolved them today): nothing on stderr."""
    launcher, _, tmp, _, _, _ = installed
    env = dict(user_env(), HOME=str(tmp / "home"))
    versions = resolved_versions(launcher)
    print("resolved fresh:", ", ".join("%s %s" % kv for kv in sorted(versions.items())))
    assert_all_quiet([run_quietly(launcher, argv, env, str(tmp), **kw) for argv, kw in OFFLINE], versions)


def test_a_fresh_install_is_quiet_against_a_box(installed, user_world, receiver, tmp_path):
    """The first commands against a box, reached the way users reach it (the alias in
    ~/.ssh/config, no --ssh-config): status, doctor, the checklist, a push and a pull, and the
    notification test: nothing on stderr but what gputui says on purpose."""
    launcher, _, _, _, _, _ = installed
    env = user_env()
    assert env["HOME"] == str(user_world.home)
    box = ["--remote-dir", user_world.box.remote_dir, "--simulate", "a100x2"]
    # [notify] urls for `notify test`, in this test's own config dir (conftest's)
    os.makedirs(env["GPUTUI_CONFIG_DIR"], exist_ok=True)
    with open(os.path.join(env["GPUTUI_CONFIG_DIR"], "config.toml"), "w") as f:
        f.write("[notify]\nurls = [%s]\n" % json.dumps(receiver.url))
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.py").write_text("print('hi')\n")
    dest = tmp_path / "boxside"
    back = tmp_path / "back"

    def progress(line):
        """push/pull report progress, advice and a summary on stderr, by design; no Python
        warning (`…: SomethingWarning: …`) and no traceback among them."""
        return not PYTHON_NOISE.search(line)
    runs = [
        (["status", "mybox"] + box, {}),
        (["status", "mybox", "--json"] + box, {"json_out": True}),
        # the checklist's verdict is its exit code: 2, not safe to release (a100x2's jobs run)
        (["checklist", "--json", "mybox"] + box, {"json_out": True, "ok": (2,)}),
        (["checklist", "mybox"] + box, {"ok": (2,)}),
        (["doctor", "--json", "--no-smoke", "mybox"] + box, {"json_out": True, "ok": (0, 1)}),
        (["push", str(data), "mybox:%s" % dest] + box, {"stderr_may": progress}),
        (["pull", "mybox:%s" % (dest / "data"), str(back)] + box, {"stderr_may": progress}),
        (["notify", "test"], {}),
    ]
    versions = resolved_versions(launcher)
    assert_all_quiet([run_quietly(launcher, argv, env, str(tmp_path), **kw) for argv, kw in runs],
                     versions)
    assert (back / "data" / "train.py").read_text() == "print('hi')\n"  # the transfers really ran
    assert receiver.hits  # and so did the notification
