import datetime

import pytest

from tui.core.config import HostConfig
from tui.core.providers import PRESETS, after_release, balance_runs_out, detect, release_warning, resolve
from tests.support import REPO


@pytest.mark.parametrize("facts, key", [
    ({"env": {"RUNPOD_POD_ID": "abc"}, "paths": ["/workspace"]}, "runpod"),
    ({"env": {"CONTAINER_ID": "123", "VAST_CONTAINERLABEL": "C.123"}}, "vast"),
    # Vast images do have /workspace: the label in PID 1's environment decides
    ({"env": {"CONTAINER_ID": "123", "VAST_CONTAINERLABEL": "C.123"}, "paths": ["/workspace"]}, "vast"),
    ({"env": {"CONTAINER_ID": "9", "CONTAINER_API_KEY": "k"}, "paths": ["/workspace"]}, "vast"),
    ({"paths": ["/root/autodl-tmp", "/root/autodl-fs"]}, "autodl"),
    ({"hostname": "autodl-container-4f1a2b-6c3d"}, "autodl"),
    ({"paths": ["/root/gpuhub-tmp"]}, "gpuhub"),
    ({"paths": ["/lambda/nfs"]}, "lambda"),
    ({"dmi_vendor": "Amazon EC2"}, "aws"),
    ({"dmi_vendor": "Google"}, "gcp"),
    ({"dmi_vendor": "Microsoft Corporation"}, "azure"),
    ({"dmi_vendor": "Alibaba Cloud"}, "alibaba"),
    ({"dmi_vendor": "Tencent Cloud"}, "cloud"),
    ({"hostname": "my-laptop"}, "unknown"),
    ({}, "unknown"),
])
def test_detect(facts, key):
    assert detect(facts) == key


# provider, action, command contains, keeps, wipes, bills contains, clock days, irreversible, stops compute
ACTIONS = [
    ("autodl", "shutdown", "shutdown -h now", ("/", "/root/autodl-tmp", "/root/autodl-fs"), (),
     "autodl-fs", 15, False, True),
    ("gpuhub", "shutdown", "shutdown -h now", ("/", "/root/gpuhub-tmp"), (), "file storage", 15, False, True),
    ("runpod", "stop", 'runpodctl pod stop "$RUNPOD_POD_ID"', ("/workspace",), ("/",), "$0.20/GB/month",
     None, False, True),
    ("runpod", "terminate", 'runpodctl pod delete "$RUNPOD_POD_ID"', (), ("/", "/workspace"),
     "$0.07/GB/month", None, True, True),
    ("vast", "stop", 'vastai stop instance "$CONTAINER_ID" --api-key "$CONTAINER_API_KEY"', ("/",), (),
     "storage_cost", None, False, True),
    ("vast", "destroy", 'vastai destroy instance "$CONTAINER_ID" --api-key "$CONTAINER_API_KEY"', (), ("/",),
     "nothing", None, True, True),
    ("lambda", "terminate", None, ("/lambda/nfs",), ("/",), "persistent filesystem", None, True, True),
    ("aws", "stop", "shutdown -h now", ("/",), ("/mnt",), "EBS", None, False, True),
    ("gcp", "stop", "shutdown -h now", ("/",), (), "persistent disks", None, False, True),
    ("azure", "deallocate", None, ("/",), ("/mnt",), "managed disks", None, False, True),
    ("azure", "os-shutdown", "shutdown -h now", ("/",), (), "full rate", None, False, False),
    ("alibaba", "stop", "shutdown -h now", ("/",), (), "economical mode", None, False, True),
]


@pytest.mark.parametrize("prov, key, command, keeps, wipes, bills, days, irreversible, stops", ACTIONS)
def test_every_action_s_facts(prov, key, command, keeps, wipes, bills, days, irreversible, stops):
    p = resolve({}, HostConfig(provider=prov), action=key)
    a = p.chosen
    assert a.key == key
    if command is None:
        assert p.release_command is None and a.api  # console/API only, and the API is named
    else:
        assert command in p.release_command
    assert tuple(p.persistent_paths) == keeps and tuple(p.ephemeral_paths) == wipes
    assert bills in after_release(p)
    assert a.clock_days == days
    assert a.irreversible is irreversible and a.stops_compute is stops


def test_the_table_covers_every_action():
    covered = {(r[0], r[1]) for r in ACTIONS}
    declared = {(k, a.key) for k, p in PRESETS.items() for a in p.actions if k != "cloud"}
    assert covered == declared


def test_fallbacks_use_the_key_on_the_box_never_print_it():
    stop = resolve({}, HostConfig(provider="runpod")).release_command
    assert "rest.runpod.io/v1/pods/\"$RUNPOD_POD_ID\"/stop" in stop and "$RUNPOD_API_KEY" in stop
    vast = resolve({}, HostConfig(provider="vast")).release_command
    assert "console.vast.ai/api/v0/instances/" in vast and "-v" not in vast.split()


def test_default_action_is_the_first_and_stops_billing():
    assert resolve({}, HostConfig(provider="runpod")).chosen.key == "stop"
    assert resolve({}, HostConfig(provider="vast")).chosen.key == "stop"
    az = resolve({"dmi_vendor": "Microsoft Corporation"}, HostConfig())
    assert az.chosen.key == "deallocate" and az.release_command is None  # never the billing shutdown
    assert resolve({}, HostConfig(provider="runpod", release_action="terminate")).chosen.key == "terminate"
    assert resolve({}, HostConfig(provider="runpod", release_action="nonsense")).chosen.key == "stop"


def test_config_overrides_the_preset():
    cfg = HostConfig(release_command="my-stop", persistent_paths=["/data"])
    p = resolve({"env": {"RUNPOD_POD_ID": "x"}}, cfg)
    assert p.name == "RunPod" and p.release_command == "my-stop" and p.persistent_paths == ["/data"]
    assert resolve({}, HostConfig(provider="autodl")).release_command == "shutdown -h now"
    assert resolve({}, HostConfig()).release_command is None  # unknown: nothing is guessed


@pytest.mark.parametrize("prov, action, facts, warns", [
    ("azure", "os-shutdown", {}, "keeps billing"),
    ("azure", "deallocate", {}, "deallocate"),
    ("aws", "stop", {}, "shutdown behaviour is 'terminate'"),
    ("aws", "stop", {"shutdown_behavior": "terminate"}, "DELETES"),
    ("alibaba", "stop", {}, "economical mode"),
    ("runpod", "terminate", {}, "network volume"),
    ("vast", "destroy", {}, "every file"),
    ("runpod", "stop", {}, None),
    ("autodl", "shutdown", {}, None),
    ("gcp", "stop", {}, None),
])
def test_release_warning(prov, action, facts, warns):
    w = release_warning(resolve({}, HostConfig(provider=prov), action=action), facts)
    if warns is None:
        assert w is None
    else:
        assert w and warns in w


@pytest.mark.parametrize("balance, spend, hhmm, hours", [
    (10.0, 2.0, "17:00", 5.0),
    (1.0, 4.0, "12:15", 0.25),
    (0.0, 1.0, "12:00", 0.0),
    (-3.0, 1.0, "12:00", 0.0),  # already negative: now
])
def test_balance_runs_out(balance, spend, hhmm, hours):
    now = datetime.datetime(2026, 12, 1, 12, 0)
    out = balance_runs_out(balance, spend, now, "stops")
    assert out["hhmm"] == hhmm and out["hours"] == pytest.approx(hours) and out["then"] == "stops"


@pytest.mark.parametrize("balance, spend", [(None, 1.0), (5.0, 0), (5.0, None), (1e9, 0.001)])
def test_balance_runs_out_without_a_clock(balance, spend):
    assert balance_runs_out(balance, spend, datetime.datetime(2026, 1, 1)) is None


@pytest.mark.parametrize("api, typed, rate, source, notice", [
    ({"ok": True, "rate_per_hour": 0.69, "source": "RunPod API", "provider": "runpod"}, 2.0, 0.69, "RunPod API", None),
    ({"ok": False, "rate_per_hour": None, "provider": "vast", "reason": "the key was refused (HTTP 401)"}, 2.0,
     2.0, "typed rate", "HTTP 401"),
    ({"ok": False, "provider": None, "reason": "no provider API key on this box"}, 2.0, 2.0, "typed rate", None),
    (None, None, None, None, None),
    ({"ok": False, "provider": "runpod", "reason": "no network (timed out)"}, None, None, None, "no network"),
])
def test_price_source(api, typed, rate, source, notice):
    from tui.core.providers import price_source
    r, s, n = price_source(api, typed)
    assert r == rate and s == source
    assert (n is None) if notice is None else (notice in n)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_provider_docs_match_the_code(lang):
    """docs/providers*.md are generated (python -m tui.core.providers): they must not drift."""
    import os
    from tui.core.providers import PROVIDER_DOCS, provider_doc
    root = REPO
    with open(os.path.join(root, PROVIDER_DOCS[lang]), encoding="utf-8") as f:
        assert f.read() == provider_doc(lang), "run: python -m tui.core.providers"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_readme_tables_match_the_code(lang):
    """README.md / README.zh-CN.md hold the same generated table between their markers."""
    import os

    from tests.support.sshd import REPO as root
    from tui.core.providers import README_FILES, provider_table, with_readme_table
    with open(os.path.join(root, README_FILES[lang]), encoding="utf-8") as f:
        text = f.read()
    assert with_readme_table(text, lang) == text, "run: python -m tui.core.providers"
    assert provider_table(lang) in text


def test_the_table_has_a_row_per_action_with_its_command():
    from tui.core.providers import TABLE_ORDER, provider_table
    en = provider_table("en")
    rows = [r for r in en.splitlines()[2:]]
    assert len(rows) == sum(len(PRESETS[k].actions) for k in TABLE_ORDER)
    assert any("| RunPod | terminate |" in r and "runpodctl pod delete" in r for r in rows)
    assert any("| Azure | deallocate |" in r and "az vm deallocate" in r for r in rows)
    zh = provider_table("zh")
    assert "| AutoDL | 关机 |" in zh and "实例连续关机 15 天会被释放" in zh


def test_after_release_never_asks_for_a_release_command_already_set():
    """An unknown provider with release_command set: the billing panel showed "release: touch x"
    above "Set release_command ... in the config"."""
    bare = resolve({}, HostConfig())
    assert "release_command" in after_release(bare)
    set_ = resolve({}, HostConfig(release_command="touch ~/released"))
    assert "release_command" not in after_release(set_) and "set provider" in after_release(set_)
