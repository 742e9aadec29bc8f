"""Per-provider boxes (issue 22): a real sshd as PID 1 of its own PID namespace, carrying that provider's
environment (and hostname / DMI vendor), reached by `gputui status --json` and `gputui checklist --json`.
The probe reads the provider from PID 1's environment, which SSH sessions do not inherit."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import tomli_w

from tests.support.sshd import start_sshd
from tests.support import REPO

UNSHARE = shutil.which("unshare")


def _unshare_works():
    if not UNSHARE or os.geteuid() != 0:
        return False
    r = subprocess.run([UNSHARE, "--pid", "--fork", "--mount-proc", "--uts", "true"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0


pytestmark = pytest.mark.skipif(not _unshare_works(), reason="unshare --pid --mount-proc needs root")


def ns_wrap(env, hostname=None, dmi_vendor=None):
    """argv that puts sshd at PID 1 of fresh PID/mount/UTS namespaces with `env` in its environment."""
    setup = []
    if hostname:
        setup.append("hostname %s" % hostname)
    if dmi_vendor:  # a tmpfs over /sys/class, in this mount namespace only
        setup.append("mount -t tmpfs none /sys/class && mkdir -p /sys/class/dmi/id && "
                     "printf '%%s\\n' '%s' > /sys/class/dmi/id/sys_vendor" % dmi_vendor)
    # PID 1 stays a shell, as a container's entrypoint does: sshd rewrites its own environ block for its
    # process title, so sshd itself as PID 1 would show an empty /proc/1/environ
    script = " && ".join(setup + ['"$@"']) + "; exit $?"
    return [UNSHARE, "--pid", "--fork", "--mount-proc", "--uts", "--kill-child", "env"] + [
        "%s=%s" % kv for kv in sorted(env.items())] + ["sh", "-c", script, "sh"]


@pytest.fixture
def nsbox(tmp_path_factory):
    boxes = []

    def make(env, **kw):
        box = start_sshd(tmp_path_factory.mktemp("nsbox"), wrap=ns_wrap(env, **kw))
        box.trust()
        boxes.append(box)
        return box
    yield make
    for box in boxes:  # killing the namespace's PID 1 ends every process in it (the probe daemon too)
        box.proc.terminate()
        try:
            box.proc.wait(10)
        except subprocess.TimeoutExpired:
            box.proc.kill()


def gputui(box, *args):
    r = subprocess.run([sys.executable, "-m", "tui", *args, "testbox", "--json", "--simulate", "adopt",
                        "--ssh-config", box.ssh_config, "--remote-dir", box.remote_dir],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.stdout, r.stderr
    return r, json.loads(r.stdout)


def write_config(isolated_dirs, host):
    d = isolated_dirs / "config"
    d.mkdir(exist_ok=True)
    (d / "config.toml").write_text(tomli_w.dumps({"hosts": {"testbox": host}}))


def ephemeral(doc):
    return {i["key"]: i for i in doc["items"]}["ephemeral"]


# env / hostname / dmi, provider name, action, after-release text, checklist detail lines
CASES = [
    ({"VAST_CONTAINERLABEL": "C.4242", "CONTAINER_ID": "4242", "CONTAINER_API_KEY": "vastsecret0123"}, {},
     "Vast.ai", "stop", "storage_cost", ["release action: stop (other choices: destroy)", "keeps: /",
                                           "wipes: nothing"]),
    ({"RUNPOD_POD_ID": "pod9x", "RUNPOD_API_KEY": "rpsecret0123"}, {},
     "RunPod", "stop", "$0.20/GB/month", ["release action: stop (other choices: terminate)",
                                          "keeps: /workspace", "wipes: /"]),
    ({}, {"hostname": "autodl-container-5f3a9c21-8b1e"},
     "AutoDL", "shutdown", "15 days", ["wipes: nothing", "clock: an instance shut down for 15 days"]),
    ({}, {"dmi_vendor": "Microsoft Corporation"},
     "Azure", "deallocate", "managed disks", ["in the console or API: az vm deallocate",
                                               "(other choices: OS shutdown (keeps billing))"]),
]


@pytest.mark.parametrize("env, kw, name, action, bills, lines", CASES, ids=[c[2] for c in CASES])
def test_provider_detected_from_pid1_with_its_action(nsbox, isolated_dirs, env, kw, name, action, bills, lines):
    box = nsbox(env, **kw)
    r, doc = gputui(box, "status")
    assert r.returncode == 0, r.stderr
    bill = doc["billing"]
    assert bill["provider"] == name and bill["release_action"] == action
    assert bills in bill["after_release"]
    r, doc = gputui(box, "checklist")
    details = "\n".join(ephemeral(doc)["details"])
    for line in lines:
        assert line in details, details
    for secret in ("vastsecret0123", "rpsecret0123"):  # keys stay on the box
        assert secret not in r.stdout and secret not in json.dumps(doc)


def test_the_chosen_action_changes_what_is_lost(nsbox, isolated_dirs):
    box = nsbox({"RUNPOD_POD_ID": "pod9x"})
    write_config(isolated_dirs, {"release_action": "terminate", "rate": 1.0})
    r, doc = gputui(box, "status")
    assert doc["billing"]["release_action"] == "terminate"
    assert "network volume" in doc["billing"]["after_release"]
    assert 'runpodctl pod delete "$RUNPOD_POD_ID"' in doc["billing"]["release_command"]
    r, doc = gputui(box, "checklist")
    assert "wipes: /, /workspace" in "\n".join(ephemeral(doc)["details"])


def test_ssh_sessions_do_not_carry_pid1_s_variables(nsbox):
    """Why PID 1 is read: the variables are not in the login's own environment."""
    box = nsbox({"VAST_CONTAINERLABEL": "C.7"})
    r = subprocess.run(["ssh", "-F", box.ssh_config, "testbox", "printenv VAST_CONTAINERLABEL; "
                        "tr '\\0' '\\n' < /proc/1/environ | grep ^VAST_"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.stdout.strip().splitlines() == ["VAST_CONTAINERLABEL=C.7"], r.stderr


def box_python(box, code):
    """Run the probe's own modules on the box, over ssh, as the daemon would."""
    root = REPO
    r = subprocess.run(["ssh", "-F", box.ssh_config, "testbox",
                        "cd %s && %s -c %s" % (root, sys.executable, json.dumps(code))],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


PRICE = "import json; from remote_probe import provider_api; print(json.dumps(provider_api.read()))"


@pytest.mark.parametrize("env, routes, rate, balance", [
    ({"RUNPOD_POD_ID": "pod9x", "RUNPOD_API_KEY": "rpsecret0123"},
     {("POST", "/graphql"): (200, {"data": {"myself": {"clientBalance": 12.0, "currentSpendPerHr": 0.69,
                                                       "pods": [{"id": "pod9x", "costPerHr": 0.79,
                                                                 "adjustedCostPerHr": 0.69}]}}})},
     0.69, 12.0),
    ({"VAST_CONTAINERLABEL": "C.4242", "CONTAINER_ID": "4242", "CONTAINER_API_KEY": "vastsecret0123"},
     {("GET", "/api/v0/instances/4242/"): (200, {"instances": {"dph_total": 0.41, "storage_cost": 0.1}}),
      ("GET", "/api/v0/users/current/"): (200, {"credit": 3.5})},
     0.41, 3.5),
])
def test_price_read_on_the_box_with_pid1_s_key(nsbox, env, routes, rate, balance):
    from tests.unit.remote_probe.test_provider_api import Api
    api = Api(routes)
    try:
        box = nsbox(dict(env, GPUTUI_RUNPOD_API=api.url, GPUTUI_VAST_API=api.url))
        r = box_python(box, PRICE)
        assert r["ok"] and r["rate_per_hour"] == rate and r["balance"] == balance, r
        key = [v for k, v in env.items() if k.endswith("API_KEY")][0]
        assert all(auth == "Bearer " + key for _m, _p, auth, _b in api.seen)  # the key from PID 1, in a header
        assert key not in json.dumps(r)
    finally:
        api.close()


def test_price_with_a_refused_key_falls_back(nsbox):
    from tests.unit.remote_probe.test_provider_api import Api
    api = Api({("POST", "/graphql"): (401, {"error": "unauthorized"})})
    try:
        box = nsbox({"RUNPOD_POD_ID": "p", "RUNPOD_API_KEY": "k", "GPUTUI_RUNPOD_API": api.url})
        r = box_python(box, PRICE)
        assert not r["ok"] and r["fallback"] == "typed rate" and "refused (HTTP 401)" in r["reason"]
    finally:
        api.close()
