"""`python -c CODE` is a one-liner, not a job (issue 36)."""

import pytest

from remote_probe.wire.job_kinds import is_inline_code


@pytest.mark.parametrize("cmd,inline", [
    ("python3 -c import sys; print(sys.path)", True), ("/usr/bin/python3.11 -u -c pass", True),
    ("python3 train.py -c config.yaml", False), ("python3 -m torch.distributed.run train.py", False),
    ("bash -c python3", False), ("", False), (None, False)])
def test_inline_code(cmd, inline):
    assert is_inline_code(cmd) is inline
