"""A password held for reconnects stays out of core dumps (issue 20): after a real password
login through sshd the gputui process has RLIMIT_CORE 0 and is not dumpable."""

import subprocess
import sys

from tests.support.user_world import pw_box  # noqa: F401 - fixture
from tests.e2e.test_password import laptop  # noqa: F401 - fixture

LOGIN = r"""
import asyncio, resource, sys
from tui.remote import nodump, ssh

class Typed(ssh.Asker):
    async def ask_password(self, prompt):
        return sys.argv[2]

async def main():
    print("before", nodump.is_dumpable(), resource.getrlimit(resource.RLIMIT_CORE)[0], flush=True)
    conn = await ssh.connect(ssh.Target.parse(sys.argv[1]), ssh.Credentials(Typed()))
    r = await conn.run("echo logged-in", check=True)
    print(r.stdout.strip(), flush=True)
    print("after", nodump.is_dumpable(), resource.getrlimit(resource.RLIMIT_CORE), flush=True)
    conn.close()

asyncio.run(main())
"""


def test_hold_secrets_turns_core_dumps_off():
    code = ("import resource; from tui.remote import nodump; done = nodump.hold_secrets(); "
            "print(','.join(sorted(done)), nodump.is_dumpable(), *resource.getrlimit(resource.RLIMIT_CORE))")
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         check=True).stdout.split()
    assert out == ["core,dumpable", "0", "0", "0"]


def test_a_password_login_makes_the_process_undumpable(pw_box, laptop):  # noqa: F811
    r = subprocess.run([sys.executable, "-c", LOGIN, pw_box.dest, pw_box.password],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=90)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert lines[0] == "before 1 %s" % lines[0].split()[-1]  # a normal process until then
    assert lines[1] == "logged-in"
    assert lines[2] == "after 0 (0, 0)"
