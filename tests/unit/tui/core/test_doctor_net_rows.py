"""The doctor's PyPI / Hugging Face rows (issue 23): the in-app doctor of the demo had none
and said nothing; with the checks turned off, a row says so and how to turn them on."""

import json
import os

from tui.core.config import HostConfig
from tui.core.checks.preflight import run_checks
from tui.core.providers import PRESETS
from tests.support import TESTS

DATA = os.path.join(TESTS, "data")


def names(checks):
    return [c.name for c in checks]


def test_rows_for_the_network_checks():
    with open(os.path.join(DATA, "preflight_h200.json")) as f:
        facts = json.load(f)
    facts["net"] = []
    off = run_checks(facts, HostConfig(net_check_urls=[]), PRESETS["unknown"], {})
    row = [c for c in off if c.name == "reach PyPI and Hugging Face"]
    assert row and "net_check_urls = []" in row[0].reason
    facts["net"] = [{"url": "https://pypi.org/simple/pip/", "ok": True, "ms": 40},
                    {"url": "https://huggingface.co/api/models?limit=1", "ok": True, "ms": 90}]
    on = run_checks(facts, HostConfig(), PRESETS["unknown"], {})
    assert "reach pypi.org" in names(on) and "reach huggingface.co" in names(on)
    assert "reach PyPI and Hugging Face" not in names(on)
