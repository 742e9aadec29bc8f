"""End to end through a real OpenSSH sshd: deploy, daemon, snapshot."""

import asyncio
import json
import os
import subprocess
import sys

from remote_probe import wire
from tui.remote import session as session_mod
from tui.remote import ssh
from tui.remote.probe.bundle import build_probe, probe_filename


def target(box):
    return ssh.Target.parse("testbox", ssh_config=box.ssh_config)


async def test_snapshot_deploys_probe_and_reads_simulated_gpus(sshbox):
    reply = await session_mod.snapshot(target(sshbox), simulate="a100x2",
                                       remote_dir=sshbox.remote_dir)
    inv = reply["inventory"]
    assert [g["name"] for g in inv["gpus"]] == ["NVIDIA A100-SXM4-80GB"] * 2
    assert inv["backend"] == "sim"
    sample = reply["sample"]
    assert len(sample["gpus"]) == 2
    # The simulated processes are real: their rows join with real /proc facts.
    meta = {m["pid"]: m for m in reply["proc_meta"]}
    procs = [wire.proc_dict(r) for r in sample["procs"]]
    assert len(procs) == 2
    for p in procs:
        assert p["local"] == 1
        assert os.path.exists("/proc/%d" % p["pid"])
        assert "train.py" in meta[p["pid"]]["cmd"] or "finetune.py" in meta[p["pid"]]["cmd"]
        assert meta[p["pid"]]["user"]
    _, sha = build_probe()
    assert os.path.exists(os.path.join(sshbox.remote_dir, probe_filename(sha)))


def gputui(*args, timeout=90):
    return subprocess.run([sys.executable, "-m", "tui", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def box_args(box, *extra):
    return ["--ssh-config", box.ssh_config, "--remote-dir", box.remote_dir, *extra]


def test_status_json_cli(sshbox):
    r = gputui("status", "testbox", "--json", "--simulate", "a100x2", *box_args(sshbox))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [g["name"] for g in doc["gpus"]] == ["NVIDIA A100-SXM4-80GB"] * 2
    assert doc["gpus"][0]["mem_total"] == 81920 and doc["gpus"][0]["util"] is not None
    assert {p["gpu"] for p in doc["processes"]} == {0, 1}
    assert all(p["cmd"].split()[1] in ("train.py", "finetune.py") for p in doc["processes"])
    assert doc["host_metrics"]["cpu"] is not None
    assert any(d["mount"] == "/" for d in doc["host_metrics"]["disks"])
    # Human output too
    r = gputui("status", "testbox", "--simulate", "a100x2", *box_args(sshbox))
    assert r.returncode == 0 and "A100-SXM4-80GB" in r.stdout and "2 GPU processes" in r.stdout


def test_cpu_only_box_says_why_there_is_no_gpu(sshbox):
    r = gputui("status", "testbox", "--simulate", "cpu-only", *box_args(sshbox))
    assert r.returncode == 0, r.stderr
    assert "No GPU: no NVIDIA GPU found" in r.stdout


async def test_second_connect_uploads_nothing(sshbox):
    t = target(sshbox)
    s1 = session_mod.RemoteSession(t, simulate="idle", remote_dir=sshbox.remote_dir)
    await s1.open()
    assert s1.uploaded
    _, sha = build_probe()
    path = os.path.join(sshbox.remote_dir, probe_filename(sha))
    mtime = os.stat(path).st_mtime_ns
    await s1.close()
    s2 = session_mod.RemoteSession(t, simulate="idle", remote_dir=sshbox.remote_dir)
    await s2.open()
    assert not s2.uploaded
    assert os.stat(path).st_mtime_ns == mtime
    assert not [n for n in os.listdir(sshbox.remote_dir) if ".tmp-" in n]
    await s2.close()


def test_unknown_host_key_is_refused_without_a_terminal(untrusted_sshbox):
    r = gputui("status", "testbox", *box_args(untrusted_sshbox))
    assert r.returncode == 2
    assert "can't be established" in r.stderr and "SHA256:" in r.stderr
    assert "not trusted; nothing was sent" in r.stderr
    assert not os.path.exists(untrusted_sshbox.remote_dir)  # nothing deployed
    assert untrusted_sshbox.known_hosts.read_text() == ""


def test_changed_host_key_refuses_to_connect(sshbox, tmp_path):
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    pub = (tmp_path / "other.pub").read_text().split()
    sshbox.known_hosts.write_text("[127.0.0.1]:%d %s %s\n" % (sshbox.port, pub[0], pub[1]))
    r = gputui("status", "testbox", *box_args(sshbox))
    assert r.returncode == 2
    assert "REFUSED" in r.stderr and "CHANGED" in r.stderr and "ssh-keygen -R" in r.stderr
    assert not os.path.exists(sshbox.remote_dir)


def test_auth_failure_is_one_clear_line(sshbox, tmp_path):
    wrong = tmp_path / "wrong"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)], check=True)
    cfg = tmp_path / "cfg"
    cfg.write_text(open(sshbox.ssh_config).read().replace(str(sshbox.user_key), str(wrong)))
    r = gputui("status", "testbox", "--ssh-config", str(cfg))
    assert r.returncode == 2
    assert r.stderr.startswith("gputui: Authentication failed for")
    assert "Traceback" not in r.stderr


def test_unreachable_and_unknown_hosts(sshbox, tmp_path):
    from tests.support.sshd import free_port
    cfg = tmp_path / "cfg"
    cfg.write_text(open(sshbox.ssh_config).read().replace("Port %d" % sshbox.port, "Port %d" % free_port()))
    r = gputui("status", "testbox", "--ssh-config", str(cfg))
    assert r.returncode == 2 and "Connection refused" in r.stderr
    r = gputui("status", "no-such-host.invalid", "--ssh-config", str(cfg))
    assert r.returncode == 2 and "Cannot resolve host" in r.stderr


def test_no_python_and_old_python_on_the_box(sshbox, tmp_path):
    r = gputui("status", "testbox", "--remote-python", "/nonexistent/python3", *box_args(sshbox))
    assert r.returncode == 2 and "/nonexistent/python3 does not exist on the box" in r.stderr
    old = tmp_path / "python3"
    old.write_text("#!/bin/sh\ncase \"$1\" in -V) echo 'Python 3.6.15';; *) exit 1;; esac\n")
    old.chmod(0o755)
    r = gputui("status", "testbox", "--remote-python", str(old), *box_args(sshbox))
    assert r.returncode == 2 and "too old (Python 3.6.15)" in r.stderr


def test_unwritable_remote_dir_is_explained(sshbox):
    # A --remote-dir the user chose is not silently replaced: it is refused with the reason.
    r = gputui("status", "testbox", "--ssh-config", sshbox.ssh_config, "--remote-dir", "/proc/gputui")
    assert r.returncode == 2
    assert "No writable place for the probe on the box: /proc/gputui is not writable" in r.stderr


async def test_daemon_survives_ssh_drops_and_session_fills_the_gap(sshbox):
    """Kill the sshd session process under a live session, repeatedly."""

    class Rec(session_mod.Listener):
        def __init__(self):
            self.seqs, self.states = [], []

        def on_sample(self, s):
            self.seqs.append(s["seq"])

        def on_state(self, state, detail=""):
            self.states.append(state)

    rec = Rec()
    s = session_mod.RemoteSession(target(sshbox), simulate="a100x2", remote_dir=sshbox.remote_dir,
                                  listener=rec)
    runner = asyncio.ensure_future(s.run())
    drops = 0
    try:
        for _ in range(3):
            while s.state != session_mod.LIVE or len(rec.seqs) < 2:
                await asyncio.sleep(0.05)
            daemon_pid = s.client.hello["pid"]
            for pid in sshbox.session_pids():
                os.kill(pid, 9)
            drops += 1
            while s.state == session_mod.LIVE:
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.5)  # samples keep being taken while we are away
            s.retry_now()
            while s.state != session_mod.LIVE:
                await asyncio.sleep(0.05)
            assert s.client.hello["pid"] == daemon_pid  # the same daemon: history kept
        n = len(rec.seqs)
        while len(rec.seqs) < n + 2:
            await asyncio.sleep(0.05)
    finally:
        await s.close()
        runner.cancel()
    assert drops == 3
    assert rec.states.count(session_mod.RECONNECTING) >= 3
    assert rec.seqs == list(range(rec.seqs[0], rec.seqs[0] + len(rec.seqs))), "gap in samples"


def test_status_opens_a_billing_session_in_the_ledger(sshbox):
    r = gputui("status", "testbox", "--json", "--simulate", "idle", *box_args(sshbox))
    assert r.returncode == 0, r.stderr
    bill = json.loads(r.stdout)["billing"]
    from remote_probe import procfs
    assert bill["start"] == procfs.pid1_start()  # the instance's start, not our connect
    rows = json.loads(gputui("ledger", "--json").stdout)
    assert [(row["host"], row["boot_id"]) for row in rows] == [("testbox", procfs.boot_id())]
    gputui("status", "testbox", "--simulate", "idle", *box_args(sshbox))
    assert len(json.loads(gputui("ledger", "--json").stdout)) == 1  # continued, not duplicated


def test_doctor_exit_codes_and_json(sshbox, isolated_dirs):
    import http.server
    import threading
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cfg_dir = isolated_dirs / "config"
    cfg_dir.mkdir(exist_ok=True)
    url = "http://127.0.0.1:%d/" % server.server_address[1]
    (cfg_dir / "config.toml").write_text(
        '[hosts.testbox]\ngpus = 2\npython = "%s"\nnet_check_urls = ["%s", "http://127.0.0.1:9/"]\n'
        % (sys.executable, url))
    try:
        r = gputui("doctor", "testbox", "--json", "--simulate", "a100x2", *box_args(sshbox))
        doc = json.loads(r.stdout)
        by_name = {c["name"]: c for c in doc["checks"]}
        # the venv's torch is a CPU build: on a box with GPUs that is a failure -> exit 2
        assert by_name["torch build"]["verdict"] == "fail" and "+cpu" in by_name["torch build"]["reason"]
        assert by_name["GPU count"]["verdict"] == "pass"
        assert by_name["reach 127.0.0.1:%d" % server.server_address[1]]["verdict"] == "pass"
        assert by_name["reach 127.0.0.1:9"]["verdict"] == "warn"
        assert r.returncode == 2
        # a CPU-only box says "no GPU" clearly, and still fails
        r = gputui("doctor", "testbox", "--simulate", "cpu-only", "--no-smoke", *box_args(sshbox))
        assert r.returncode == 2 and "no NVIDIA GPU" in r.stdout
        # only warnings (a consumer card, a python without torch) -> exit 1
        (cfg_dir / "config.toml").write_text(
            '[hosts.testbox]\ngpus = 1\npython = "/usr/bin/python3"\nnet_check_urls = ["%s"]\n' % url)
        r = gputui("doctor", "testbox", "--simulate", "idle", *box_args(sshbox))
        assert "no torch" in r.stdout and r.returncode == 1, r.stdout
    finally:
        server.shutdown()


def test_status_through_a_proxyjump_alias(sshbox, tmp_path):
    """A ~/.ssh/config alias with ProxyJump, like a bastion in front of a GPU box."""
    cfg = tmp_path / "cfg"
    cfg.write_text(open(sshbox.ssh_config).read() + """
Host gpu-behind-bastion
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s
  UserKnownHostsFile %s
  ProxyJump testbox
""" % (sshbox.port, os.environ.get("USER") or "root", sshbox.user_key, sshbox.known_hosts))
    r = gputui("status", "gpu-behind-bastion", "--json", "--simulate", "idle", "--ssh-config", str(cfg),
               "--remote-dir", sshbox.remote_dir)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["gpus"][0]["name"] == "NVIDIA GeForce RTX 4090"
    # two logins: the bastion hop, and the box reached through its forwarded channel
    assert sshbox.log.read_text().count("Accepted publickey") == 2


async def test_a_login_shell_that_hangs_is_named_with_what_it_printed(sshbox, monkeypatch):
    """A ~/.bashrc that waits (pyenv init on a stale rehash lock did, on our own CI box) must
    not read as gputui's start script hanging: the message names the startup files, the
    non-interactive guard, and the box's own complaint."""
    from tui.remote import transports
    (sshbox.root / "home" / ".bashrc").write_text(
        "echo 'pyenv: cannot rehash: /root/.pyenv/shims/.pyenv-shim exists' >&2\nsleep 30\n")
    monkeypatch.setattr(transports, "MARKER_TIMEOUT", 3.0)
    try:
        await session_mod.snapshot(target(sshbox), simulate="a100x2", remote_dir=sshbox.remote_dir)
    except transports.StartFailed as exc:
        text = str(exc)
    else:
        raise AssertionError("a hung login shell started the probe")
    assert "login shell did not run gputui's start command within 3 s" in text, text
    assert "~/.bashrc" in text and "case $- in" in text
    assert "pyenv: cannot rehash" in text
