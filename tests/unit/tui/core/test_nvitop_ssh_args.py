"""Issue 23: nvitop's `ssh -t` reaches the box the way the rest of gputui does: the same
--ssh-config and the -i/-J/-o of a pasted login command (like tmux attach), not only -p/-l."""

from tui.core import nvitop_commands
from tui.core.jobs import tmux_rows as jobs
from tui.remote import ssh


def test_nvitop_and_tmux_attach_use_the_same_ssh_options():
    t = ssh.Target.parse(["ssh", "-p", "2222", "-i", "/keys/box", "-J", "hop", "-o",
                          "ServerAliveInterval=5", "root@10.0.0.7"], ssh_config="/cfg/ssh_config")
    nv = nvitop_commands.terminal_argv(t, "nvitop")
    at = jobs.attach_argv(t, "$1")
    assert nv[:nv.index("--")] == at[:at.index("--")]
    for word in ("-F", "/cfg/ssh_config", "-i", "/keys/box", "-J", "hop", "ServerAliveInterval=5"):
        assert word in nv, (word, nv)
    assert nv[nv.index("--") + 1] == "10.0.0.7"
