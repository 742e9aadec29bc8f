"""The suite's slow tests and how long each took, so conftest can start the longest first.

Refresh after adding slow tests (any test left out just runs in the default order):

    .venv/bin/python -m pytest --durations=0 -q > /tmp/d.txt; python -m tests.support.durations /tmp/d.txt
"""

import json
import os
import re
import sys
from typing import Dict

RECORD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "durations.json")
KEEP_OVER = 2.0  # seconds: shorter tests are not worth ordering
LINE = re.compile(r"^([0-9.]+)s (setup|call|teardown)\s+(\S.*)$")  # ids may hold spaces


def recorded_durations() -> Dict[str, float]:
    try:
        with open(RECORD) as f:
            return {k: float(v) for k, v in json.load(f).items()}
    except (OSError, ValueError, AttributeError):
        return {}  # no record (or a broken one): the default order


def parse(text: str) -> Dict[str, float]:
    """setup + call + teardown per test, from pytest's --durations report."""
    took: Dict[str, float] = {}
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if m:
            took[m.group(3)] = took.get(m.group(3), 0.0) + float(m.group(1))
    return {k: round(v, 1) for k, v in sorted(took.items(), key=lambda kv: -kv[1]) if v >= KEEP_OVER}


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        record = parse(f.read())
    with open(RECORD, "w") as f:
        json.dump(record, f, indent=0, sort_keys=False)
        f.write("\n")
    print("%d tests over %.0f s recorded in %s" % (len(record), KEEP_OVER, RECORD))
