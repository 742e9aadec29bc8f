"""Per-provider boxes (issue 22): a real sshd as PID 1 of its own PID namespace, carrying that provider's
environment (and hostname / DMI vendor), reached by `gputui status --json` and `gputui checklist --json`.
The probe reads the provider from PID 1's environment, which SSH sessions do not inherit."""

import json
import os
import shutil
import subprocess
import sys
import time

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
        # unshare does not pass SIGTERM on (each teardown waited its full 10 s); killed, its
        # --kill-child takes the namespace's PID 1 and so everything in it
        box.proc.kill()
        box.proc.wait(10)


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


PRICE = "import json; from remote_probe.provider import api; print(json.dumps(api.read()))"


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


# -- the price in the billing clock, with no `b` typed (issue 22) ----------------------------------------
RUNPOD_ENV = {"RUNPOD_POD_ID": "pod9x", "RUNPOD_API_KEY": "rpsecret0123"}
RUNPOD_ROUTES = {("POST", "/graphql"): (200, {"data": {"myself": {
    "clientBalance": 12.0, "currentSpendPerHr": 2.0,
    "pods": [{"id": "pod9x", "costPerHr": 0.79, "adjustedCostPerHr": 0.69}]}}})}
VAST_ENV = {"VAST_CONTAINERLABEL": "C.4242", "CONTAINER_ID": "4242", "CONTAINER_API_KEY": "vastsecret0123"}
VAST_ROUTES = {("GET", "/api/v0/instances/4242/"): (200, {"instances": {"dph_total": 0.41, "storage_cost": 0.1}}),
               ("GET", "/api/v0/users/current/"): (200, {"credit": 3.5})}


def files_under(root):
    for d, _dirs, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    yield p, f.read()


@pytest.mark.parametrize("env, routes, rate, label, balance", [
    (RUNPOD_ENV, RUNPOD_ROUTES, 0.69, "price from RunPod API", 12.0),
    (VAST_ENV, VAST_ROUTES, 0.41, "price from Vast.ai API", 3.5),
], ids=["RunPod", "Vast.ai"])
def test_status_bills_the_price_read_on_the_box(nsbox, isolated_dirs, env, routes, rate, label, balance):
    """No rate typed, no config: the billing comes from the provider's API, asked from the box with PID 1's
    key, and says so; the balance's end is a clock time. The key is in no reply, output or probe file."""
    from tests.unit.remote_probe.test_provider_api import Api
    api = Api(routes)
    try:
        box = nsbox(dict(env, GPUTUI_RUNPOD_API=api.url, GPUTUI_VAST_API=api.url))
        r, doc = gputui(box, "status")
        assert r.returncode == 0, r.stderr
        bill = doc["billing"]
        assert bill["rate"] == rate and bill["currency"] == "USD" and bill["rate_source"] == "api"
        assert bill["rate_label"] == label and bill["balance"] == balance
        assert bill["cost"] is not None and bill["cost"] > 0
        hhmm = bill["balance_runs_out"]["at"]
        assert len(hhmm) == 5 and hhmm[2] == ":" and "runs out at " in bill["balance_text"]
        assert hhmm in bill["balance_text"]
        hours = balance / (2.0 if env is RUNPOD_ENV else rate)  # the account's spend, else this box's price
        assert abs(bill["balance_runs_out"]["epoch"] - (time.time() + hours * 3600)) < 180
        assert api.seen, "the box asked the provider"
        r2, checklist = gputui(box, "checklist")  # the final bill at the provider's price too
        bill_item = {i["key"]: i for i in checklist["items"]}["bill"]
        assert bill_item["verdict"] == "pass" and "$" in bill_item["reason"], bill_item
        text = subprocess.run([sys.executable, "-m", "tui", "status", "testbox", "--simulate", "adopt",
                               "--ssh-config", box.ssh_config, "--remote-dir", box.remote_dir],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert label in text.stdout and "runs out at" in text.stdout, text.stdout + text.stderr
        key = [v for k, v in env.items() if k.endswith("API_KEY")][0]
        for out in (r.stdout, r.stderr, text.stdout, text.stderr, r2.stdout, r2.stderr):
            assert key not in out
        for path, data in files_under(box.remote_dir):  # the daemon's logs and state on the box
            assert key.encode() not in data, path
    finally:
        api.close()


def test_status_with_a_refused_key_uses_the_typed_rate_and_says_so(nsbox, isolated_dirs):
    from tests.unit.remote_probe.test_provider_api import Api
    api = Api({("POST", "/graphql"): (401, {"error": "unauthorized"})})
    try:
        box = nsbox(dict(RUNPOD_ENV, GPUTUI_RUNPOD_API=api.url))
        write_config(isolated_dirs, {"rate": 1.5, "currency": "USD"})
        r, doc = gputui(box, "status")
        assert doc["billing"]["rate"] == 1.5 and doc["billing"]["rate_label"] == "typed rate"
        assert r.stderr.count("could not read the price from the provider") == 1, r.stderr
        assert "refused (HTTP 401)" in r.stderr and "rpsecret0123" not in r.stderr + r.stdout
    finally:
        api.close()


# -- the app: its header, and the Release screen's action and warnings --------------------------------
def app_for(box, config_doc, tmp_path):
    from tui.core.config import Config
    from tui.core.billing.ledger import Ledger
    from tui.remote import ssh
    from tui.ui.app import GputuiApp
    cfg_path = tmp_path / "config.toml"
    cfg_path.write_text(tomli_w.dumps({"hosts": {"testbox": config_doc}}))
    return GputuiApp(ssh.Target.parse("testbox", ssh_config=box.ssh_config), simulate="adopt",
                     remote_dir=box.remote_dir, config=Config.load(str(cfg_path)),
                     ledger=Ledger(str(tmp_path / "ledger.db")))


async def waive_failures(pilot, screen):
    """The box's home holds files not downloaded: waived with w, as a user would, so R gets to its dialogs."""
    for key in [i.key for i in screen.items if i.verdict == "fail"]:
        screen.query_one("#items").move_cursor(row=[i.key for i in screen.items].index(key))
        await pilot.pause(0.1)
        await pilot.press("w")


def shown(app, selector):
    return str(app.screen.query_one(selector).render())


@pytest.mark.timeout(240)
async def test_the_app_header_shows_the_provider_price_and_the_release_choice(nsbox, isolated_dirs, tmp_path):
    from tui.ui.screens.release_choice import ActionChoiceScreen
    from tui.ui.screens.release_screen import ReleaseScreen

    from tests.e2e.test_app import SIZE, wait_for
    from tests.unit.remote_probe.test_provider_api import Api
    api = Api(RUNPOD_ROUTES)
    try:
        box = nsbox(dict(RUNPOD_ENV, GPUTUI_RUNPOD_API=api.url))
        app = app_for(box, {"autostop": {"allowed": True, "idle_minutes": 600}}, tmp_path)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await wait_for(pilot, lambda: app.box.billing.figures().rate_source == "api", timeout=60)
            await wait_for(pilot, lambda: "price from RunPod API" in shown(app, "#status"))
            status = shown(app, "#status")
            assert "$" in status, status
            await wait_for(pilot, lambda: "balance $12.00 runs out at" in shown(app, "#billing"))
            assert "after stop: the volume disk at /workspace keeps billing" in shown(app, "#billing")
            # the Release screen: the action first, with what it keeps and bills
            await pilot.press("R")
            await wait_for(pilot, lambda: isinstance(app.screen, ReleaseScreen) and app.screen.items, timeout=60)
            head = shown(app, "#rel-action")
            assert "release action: stop (other choices: terminate)" in head and "keeps: /workspace" in head
            await waive_failures(pilot, app.screen)
            await pilot.press("R")  # a choice is offered: asked before anything else
            await wait_for(pilot, lambda: isinstance(app.screen, ActionChoiceScreen))
            options = app.screen.query_one("#choices")
            text = " ".join(str(options.get_option_at_index(i).prompt) for i in range(options.option_count))
            assert "terminate" in text and "network volume" in text and "$0.20/GB/month" in text
            options.highlighted = 1
            await pilot.press("enter")
            # terminate: the confirm dialog names it and warns; cancelled, nothing ran
            from tui.ui.screens.release_screen import TypeToConfirm
            await wait_for(pilot, lambda: isinstance(app.screen, TypeToConfirm))
            what = shown(app, "#what")
            assert "Action: RunPod terminate" in what and "deletes /workspace" in what
            assert "pod delete" in what
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, ReleaseScreen))
            eph = {i.key: i for i in app.screen.items}["ephemeral"]
            assert "wipes: /, /workspace" in eph.details, eph.details  # the checklist follows the choice
            assert "network volume" in shown(app, "#rel-action")
            await pilot.press("escape")
            await wait_for(pilot, lambda: "after terminate: nothing for the pod" in shown(app, "#billing"))
            # autostop arms the chosen action and shows it
            from tui.ui.screens.modals import AutostopScreen
            await pilot.press("a")
            await wait_for(pilot, lambda: isinstance(app.screen, AutostopScreen))
            assert "(RunPod terminate)" in shown(app, "#what")
            await pilot.click("#arm")
            await wait_for(pilot, lambda: (app.box.autostop or {}).get("armed"), timeout=20)
            armed = app.box.autostop["armed"]
            assert armed["action"] == "terminate" and "pod delete" in armed["command"]
            await wait_for(pilot, lambda: "autostop armed (terminate)" in shown(app, "#billing"))
            await app.box.session.request("autostop_disarm", reason="test over")
            await pilot.press("q")
        assert all(a == "Bearer rpsecret0123" for _m, _p, a, _b in api.seen)
    finally:
        api.close()


@pytest.mark.timeout(240)
@pytest.mark.parametrize("vendor, warning, runs", [
    ("Microsoft Corporation", "deallocate it in the portal", False),  # deallocate: nothing runs on the box
    ("Amazon EC2", "shutdown behaviour is 'terminate'", True),
], ids=["Azure", "AWS"])
async def test_cloud_boxes_warn_before_any_release(nsbox, isolated_dirs, tmp_path, vendor, warning, runs):
    from tui.ui.screens.release_screen import ReleaseScreen, TypeToConfirm

    from tests.e2e.test_app import SIZE, wait_for
    box = nsbox({}, dmi_vendor=vendor)
    app = app_for(box, {"rate": 3.0}, tmp_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.box.state.samples_seen >= 1, timeout=60)
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ReleaseScreen) and app.screen.items, timeout=60)
        assert warning in shown(app, "#rel-action")  # on screen before R is pressed
        await waive_failures(pilot, app.screen)
        await pilot.press("R")
        if runs:
            await wait_for(pilot, lambda: isinstance(app.screen, TypeToConfirm))
            assert warning in shown(app, "#what") and "sudo shutdown -h now" in shown(app, "#what")
            await pilot.press("escape")  # cancelled: never typed the name
        else:
            # two actions: asked first, each with what it bills and its warning
            from tui.ui.screens.release_choice import ActionChoiceScreen
            await wait_for(pilot, lambda: isinstance(app.screen, ActionChoiceScreen))
            options = app.screen.query_one("#choices")
            text = " ".join(str(options.get_option_at_index(i).prompt) for i in range(options.option_count))
            assert "deallocate" in text and "keeps billing at the full rate" in text
            options.highlighted = 0  # deallocate: the console or az, nothing on the box
            await pilot.press("enter")
            await wait_for(pilot, lambda: any("No release command" in n.message for n in app._notifications))
            assert not isinstance(app.screen, TypeToConfirm)
            # the OS shutdown can be chosen (c), its warning in the confirm dialog
            await pilot.press("c")
            await wait_for(pilot, lambda: isinstance(app.screen, ActionChoiceScreen))
            app.screen.query_one("#choices").highlighted = 1
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, ReleaseScreen))
            assert "keeps billing" in shown(app, "#rel-action")
            await pilot.press("R")
            await wait_for(pilot, lambda: isinstance(app.screen, TypeToConfirm))
            assert "keeps billing" in shown(app, "#what") and "Action: Azure OS shutdown" in shown(app, "#what")
            await pilot.press("escape")
        await pilot.press("escape", "q")


@pytest.mark.timeout(180)
async def test_the_fleet_row_bills_the_provider_price(nsbox, isolated_dirs):
    """gputui fleet asks each live box for its provider's price too: the row's rate is RunPod's."""
    from tui.ui.fleet_app import FleetApp

    from tests.unit.remote_probe.test_provider_api import Api
    api = Api(RUNPOD_ROUTES)
    try:
        box = nsbox(dict(RUNPOD_ENV, GPUTUI_RUNPOD_API=api.url))
        write_config(isolated_dirs, {"simulate": "adopt", "remote_dir": box.remote_dir})
        app = FleetApp(hosts=["testbox"], ssh_config=box.ssh_config)
        async with app.run_test(size=(170, 30)) as pilot:
            for _ in range(600):
                row = app.fleet.rows()[0]
                if row.rate is not None:
                    break
                await pilot.pause(0.1)
            assert row.rate == 0.69 and row.currency == "USD", row
            await pilot.press("q")
    finally:
        api.close()


def test_autodl_wallet_balance_with_the_laptop_token(nsbox, isolated_dirs, monkeypatch):
    """AutoDL: the developer token stays on the laptop (0600 config); the balance counts down at the
    typed rate and the token never reaches the box."""
    from tests.unit.remote_probe.test_provider_api import Api
    api = Api({("POST", "/api/v1/dev/wallet/balance"): (200, {"code": "Success", "msg": "",
                                                               "data": {"assets": 50000, "accumulate": 0}})})
    try:
        monkeypatch.setenv("GPUTUI_AUTODL_API", api.url)  # the laptop's process, not the box's
        box = nsbox({}, hostname="autodl-container-5f3a9c21-8b1e")
        write_config(isolated_dirs, {"rate": 2.5, "autodl_token": "adl-token-0123"})
        os.chmod(isolated_dirs / "config" / "config.toml", 0o600)
        r, doc = gputui(box, "status")
        bill = doc["billing"]
        assert bill["provider"] == "AutoDL" and bill["rate"] == 2.5 and bill["rate_label"] == "typed rate"
        assert bill["balance"] == 50.0 and "runs out at" in bill["balance_text"], bill
        assert abs(bill["balance_runs_out"]["epoch"] - (time.time() + 20 * 3600)) < 180
        assert api.seen and api.seen[0][2] == "adl-token-0123"
        assert "adl-token-0123" not in r.stdout + r.stderr
        for path, data in files_under(box.remote_dir):
            assert b"adl-token-0123" not in data, path
    finally:
        api.close()
