"""The CLI in Chinese through a real sshd (issue 14): text output translated, chosen by LANG or
--lang; --json keeps English keys and values whatever the language."""

import json
import os
import re
import subprocess
import sys

from tests.support.fleet_fixtures import simfleet  # noqa: F401 - the fixture
from tests.e2e.test_status import box_args

CJK = re.compile(r"[\u4e00-\u9fff]")


def gputui(*args, env=None):
    return subprocess.run([sys.executable, "-m", "tui", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, **(env or {})))


def test_status_and_doctor_text_in_chinese_json_in_english(sshbox):
    zh = {"LANG": "zh_CN.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""}
    r = gputui("status", "testbox", "--simulate", "a100x2", *box_args(sshbox), env=zh)
    assert r.returncode == 0, r.stderr
    assert "2 个 GPU 进程" in r.stdout and "利用率" in r.stdout, r.stdout
    r = gputui("doctor", "testbox", "--simulate", "a100x2", "--no-smoke", *box_args(sshbox), env=zh)
    assert "系统盘" in r.stdout and "显存 81920 MiB，整卡" in r.stdout, r.stdout
    assert re.search(r"testbox: (通过|警告|失败) \(", r.stdout), r.stdout
    # scripts read JSON: English names and reasons even under a Chinese locale
    r = gputui("doctor", "testbox", "--json", "--simulate", "a100x2", "--no-smoke",
               *box_args(sshbox), env=zh)
    doc = json.loads(r.stdout)
    assert "system disk" in {c["name"] for c in doc["checks"]}
    assert not CJK.search(r.stdout), r.stdout
    # --lang beats the locale
    r = gputui("--lang", "en", "status", "testbox", "--simulate", "a100x2", *box_args(sshbox), env=zh)
    assert "2 GPU processes" in r.stdout and not CJK.search(r.stdout)
    r = gputui("status", "testbox", "--simulate", "a100x2", "--lang", "zh", *box_args(sshbox))
    assert "2 个 GPU 进程" in r.stdout


def test_unknown_language_is_a_usage_error():
    r = gputui("--lang", "fr", "scenarios")
    assert r.returncode == 64 and "fr" in r.stderr


def test_fleet_check_in_chinese_json_in_english(simfleet):  # noqa: F811
    """`gputui fleet --check` under a Chinese locale: the table, states, the alarm line and the
    exit code; `--json` under the same locale stays English (scripts and cron read it)."""
    import time
    zh = {"LANG": "zh_CN.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""}
    r = gputui("fleet", "--json", "--ssh-config", simfleet.ssh_config, "--timeout", "60", env=zh)
    doc = json.loads(r.stdout)
    assert {b["host"]: b["state"] for b in doc["boxes"]}["deadbox"] == "unreachable", r.stderr
    assert not CJK.search(r.stdout), r.stdout
    time.sleep(4)  # the idle box crosses the 3 s alarm threshold (as in test_e2e_fleet)
    r = gputui("fleet", "--check", "--ssh-config", simfleet.ssh_config, "--timeout", "60", env=zh)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.splitlines()[0].split()[:3] == ["主机", "状态", "GPU"], r.stdout
    assert "警报：1 台机器空闲，正在白烧 ¥8.40/h" in r.stdout, r.stdout
    idle = next(l for l in r.stdout.splitlines() if l.startswith("idle1"))
    assert " 在线 " in idle and "空闲，仍在计费" in idle, idle
    assert " 已释放 " in next(l for l in r.stdout.splitlines() if l.startswith("gone"))
    assert " 无法连接 " in next(l for l in r.stdout.splitlines() if l.startswith("deadbox"))
    r = gputui("fleet", "--help", env=zh)
    assert "遗忘机器警报" in r.stdout and "--check" in r.stdout, r.stdout
