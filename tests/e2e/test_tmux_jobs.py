"""Which tmux pane runs a job, judged by the process tree below the pane's shell (issue 20):
`./train.sh` and `bash -c 'python3 x.py; ...'` show `bash` as the pane's current command,
and used to count as an idle shell, letting the checklist pass mid-run."""

import json
import subprocess
import sys
import time

import pytest
import tomli_w

from remote_probe import tmux_control as tmux

# pane shell 100; a tree per case: {pid: (comm, ppid)}
CASES = [
    ("idle shell", {100: ("bash", 1)}, (), None),
    ("script running python", {100: ("bash", 1), 101: ("train.sh", 100), 102: ("python3", 101)},
     (), 102),
    ("bash -c running python", {100: ("bash", 1), 101: ("bash", 100), 102: ("python3.11", 101)},
     (), 102),
    ("python deep below shells", {100: ("zsh", 1), 101: ("bash", 100), 102: ("sh", 101),
                                  103: ("python", 102)}, (), 103),
    ("a non-shell program", {100: ("bash", 1), 101: ("bash", 100), 102: ("sleep", 101)}, (), 102),
    ("python preferred over its helper", {100: ("bash", 1), 101: ("tee", 100),
                                          102: ("python3", 100)}, (), 102),
    ("a GPU process first", {100: ("bash", 1), 101: ("python3", 100), 102: ("trainer", 101)},
     (102,), 102),
    ("the pane's own program", {100: ("python3", 1)}, (), 100),
    ("nested shells only", {100: ("bash", 1), 101: ("bash", 100), 102: ("sh", 101)}, (), None),
    ("another pane's job is not ours", {100: ("bash", 1), 200: ("bash", 1),
                                        201: ("python3", 200)}, (), None),
]


@pytest.mark.parametrize("name,tree,gpu,expect", CASES, ids=[c[0] for c in CASES])
def test_pane_job_from_the_process_tree(name, tree, gpu, expect):
    stats = {pid: (comm, "S", ppid, 0, 0, 0, 0) for pid, (comm, ppid) in tree.items()}
    children, comm = tmux.children_map(stats)
    assert tmux.pane_job(100, children, comm, gpu) == expect


def test_a_cycle_in_a_stale_map_ends():
    assert tmux.pane_job(1, {1: [2], 2: [1]}, {1: "bash", 2: "bash"}) is None


pytestmark_e2e = pytest.mark.timeout(300)


def cli(box, *args, timeout=150):
    return subprocess.run([sys.executable, "-m", "tui", *args, "testbox", "--simulate", "idle",
                           "--ssh-config", box.ssh_config, "--remote-dir", box.remote_dir],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)


@pytestmark_e2e
@pytest.mark.parametrize("how", ["script", "bash -c"])
def test_a_script_started_job_in_tmux_blocks_the_checklist(sshbox, tmp_path, isolated_dirs, how):
    from tests.support.sshd import box_tmux_env
    cfg_dir = isolated_dirs / "config"
    cfg_dir.mkdir(exist_ok=True)
    (cfg_dir / "config.toml").write_text(tomli_w.dumps({"hosts": {"testbox": {
        "rate": 1.0, "provider": "runpod", "artifact_paths": [str(tmp_path / "none")],
        "search_paths": [str(tmp_path / "none")], "temp_dirs": [str(tmp_path / "none")],
        "cache_dirs": [], "python": sys.executable}}}))
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/bash\necho training\npython3 -c 'import time; time.sleep(600)'\n"
                      "echo done\n")
    script.chmod(0o755)
    env = box_tmux_env(sshbox)
    command = "./train.sh" if how == "script" else \
        "bash -c \"python3 -c 'import time; time.sleep(600)'; echo finished\""
    subprocess.run(["tmux", "new-session", "-d", "-s", "train", "-c", str(tmp_path)], check=True,
                   env=env)
    subprocess.run(["tmux", "send-keys", "-t", "train", "-l", command], check=True, env=env)
    subprocess.run(["tmux", "send-keys", "-t", "train", "Enter"], check=True, env=env)
    deadline = time.time() + 10
    while time.time() < deadline:  # the python below it is up
        out = subprocess.run(["pgrep", "-f", "import time; time.sleep\\(600\\)"],
                             stdout=subprocess.PIPE, text=True).stdout
        if out.strip():
            break
        time.sleep(0.1)
    current = subprocess.run(["tmux", "display", "-p", "-t", "train", "#{pane_current_command}"],
                             env=env, stdout=subprocess.PIPE, text=True).stdout.strip()
    assert current == "bash"  # what fooled the old check
    r = cli(sshbox, "checklist", "--json")
    doc = json.loads(r.stdout)
    jobs = {i["key"]: i for i in doc["items"]}["jobs"]
    assert jobs["verdict"] == "fail", jobs
    assert any("tmux 'train'" in d and "python3" in d for d in jobs["details"]), jobs["details"]
    subprocess.run(["tmux", "send-keys", "-t", "train", "C-c"], check=True, env=env)
    deadline = time.time() + 30  # the script and its python take a moment to go on a busy box
    while True:
        time.sleep(1)
        r = cli(sshbox, "checklist", "--json")
        jobs = {i["key"]: i for i in json.loads(r.stdout)["items"]}["jobs"]
        if jobs["verdict"] == "pass" or time.time() > deadline:
            break
    assert jobs["verdict"] == "pass", jobs  # back at the prompt: finished

