"""`gputui demo`: a real SSH session to a simulated GPU box, with nothing to set up.

An embedded asyncssh server listens on 127.0.0.1 with a throwaway host key and user
key. Commands run as real processes in a throwaway home, SFTP is real, the probe is
deployed and run exactly as on a rented box; only the GPU is simulated. Everything
(daemon, simulated jobs, temp files) is gone when the demo exits.
"""

import asyncio
import os
import shutil
import tempfile
import time

import asyncssh

from tui.remote.ssh import Target

DEMO_ALIAS = "gputui-demo"
RENTED_BEFORE = 3600.0  # the demo box "was rented" an hour before the demo began (its billing clock)


class _DemoServer(asyncssh.SSHServer):
    """Socket channels (direct-streamlocal) to the demo box's own files only, so the demo
    shows later connects reaching the probe daemon without a command, as OpenSSH allows."""

    def __init__(self, root):
        self.root = os.path.realpath(root)

    def unix_connection_requested(self, dest_path):
        return os.path.realpath(dest_path).startswith(self.root + os.sep)


class DemoBox:
    def __init__(self):
        self.dir = None
        self.home = None
        self.server = None
        self.port = None
        self.ssh_config = None
        self.children = set()
        self.rented_at = time.time() - RENTED_BEFORE

    async def start(self):
        self.dir = tempfile.mkdtemp(prefix="gputui-demo-")
        self.home = os.path.join(self.dir, "home")
        os.makedirs(self.home, mode=0o700)
        os.makedirs(os.path.join(self.home, "tmp"), mode=0o700)
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        user_key = asyncssh.generate_private_key("ssh-ed25519")
        key_path = os.path.join(self.dir, "id_ed25519")
        user_key.write_private_key(key_path)
        os.chmod(key_path, 0o600)
        authorized = asyncssh.import_authorized_keys(
            user_key.export_public_key("openssh").decode())
        self.server = await asyncssh.listen(
            "127.0.0.1", 0, server_factory=lambda: _DemoServer(self.dir),
            server_host_keys=[host_key], authorized_client_keys=authorized,
            process_factory=self._run_command, encoding=None,
            sftp_factory=lambda chan: asyncssh.SFTPServer(chan, chroot=self.home.encode()),
            allow_scp=False)
        self.port = self.server.sockets[0].getsockname()[1]
        known = os.path.join(self.dir, "known_hosts")
        pub = " ".join(host_key.export_public_key("openssh").decode().split()[:2])
        with open(known, "w") as f:
            f.write("[127.0.0.1]:%d %s\n" % (self.port, pub))
        self.ssh_config = os.path.join(self.dir, "ssh_config")
        with open(self.ssh_config, "w") as f:
            f.write("Host %s\n  HostName 127.0.0.1\n  Port %d\n  User demo\n"
                    "  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n"
                    % (DEMO_ALIAS, self.port, key_path, known))
        return self

    def tmux_socket(self):
        """The demo box's own tmux server (TMUX_TMPDIR is the demo folder)."""
        return os.path.join(self.dir, "tmux-%d" % os.getuid(), "default")

    def attach_argv(self, session_id):
        """Attach locally: the demo box is this machine, and the embedded server serves no PTY
        (and runs inside the very process that would wait for `ssh -t`)."""
        return ["env", "-u", "TMUX", "tmux", "-S", self.tmux_socket(), "attach-session",
                "-t", session_id]

    def box_env(self):
        """The environment of every command on the demo box (its own home, temp, tmux)."""
        env = dict(os.environ, HOME=self.home, GPUTUI_OWNER_PID=str(os.getpid()),
                   TMUX_TMPDIR=self.dir, GPUTUI_SIM_SCOPE=self.dir,
                   GPUTUI_SIM_STARTED="%.0f" % self.rented_at,
                   TMPDIR=os.path.join(self.home, "tmp"),
                   XDG_CACHE_HOME=os.path.join(self.home, ".cache"))
        env.pop("TMUX", None)
        return env

    def terminal_argv(self, command):
        """Run a box command (nvitop) in this terminal: the demo box is this machine, and its
        embedded server gives commands pipes, not the terminal nvitop needs."""
        env = self.box_env()
        names = ("HOME", "TMPDIR", "XDG_CACHE_HOME", "TMUX_TMPDIR", "GPUTUI_SIM_SCOPE")
        return (["env", "-u", "TMUX"] + ["%s=%s" % (k, env[k]) for k in names]
                + ["/bin/sh", "-c", 'cd "$HOME" && ' + command])

    def target(self):
        return Target.parse(DEMO_ALIAS, ssh_config=self.ssh_config)

    async def _run_command(self, process):
        # The demo box's tmux is its own server (TMUX_TMPDIR), not the user's sessions.
        env = self.box_env()
        try:
            child = await asyncio.create_subprocess_exec(
                "/bin/sh", "-c", process.command or "exec $SHELL", cwd=self.home, env=env,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
        except OSError as exc:
            process.stderr.write(("gputui demo: %s\n" % exc).encode())
            process.exit(127)
            return
        self.children.add(child)
        try:
            await process.redirect(stdin=child.stdin, stdout=child.stdout, stderr=child.stderr)
            code = await child.wait()
            # The redirect copies output in its own tasks: exiting before they reach EOF cut
            # the last of a short command's output off.
            for _ in range(200):
                if all(s.at_eof() for s in (child.stdout, child.stderr)):
                    break
                await asyncio.sleep(0.01)
            process.exit(code)
        except (asyncssh.Error, OSError, BrokenPipeError):
            pass
        finally:
            if child.returncode is None:
                child.terminate()  # stop() waits for it: its transport closes on a live loop
            else:
                self.children.discard(child)

    async def stop(self):
        import subprocess
        tmux = shutil.which("tmux")
        if tmux and self.dir:  # the demo's own tmux server, with any job started in it
            # -S names the socket: with $TMUX set (demo run inside tmux) a bare kill-server
            # would kill the user's own tmux.
            socket_path = self.tmux_socket()
            try:
                subprocess.run([tmux, "-S", socket_path, "kill-server"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for child in list(self.children):
            if child.returncode is None:
                child.terminate()
        for child in list(self.children):
            # waited here, not left to the garbage collector: a subprocess transport collected
            # after its loop closed raised in __del__, and a collection inside ast.parse of
            # a later test broke it (CPython 3.11 "AST constructor recursion depth mismatch")
            try:
                await asyncio.wait_for(child.wait(), 5)
            except asyncio.TimeoutError:
                child.kill()
                await child.wait()
        self.children.clear()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
        # The probe daemon was asked to stop by the app; make sure, then clean up.
        from remote_probe.daemon import terminate
        await asyncio.get_running_loop().run_in_executor(
            None, terminate, os.path.join(self.home, ".cache", "gputui"))
        shutil.rmtree(self.dir, ignore_errors=True)


def demo_config(path, home):
    """The demo's own settings: a plausible price so the billing meter has something to
    show, and search roots inside the demo box's home only, so the checklist never lists (or
    offers to delete) anything of the real machine."""
    from tui.core.config import Config
    return Config({"hosts": {DEMO_ALIAS: {
        "rate": 11.96, "currency": "CNY", "granularity": "second", "budget_session": 50.0,
        "storage_gb": 200, "storage_price_gb_month": 0.3, "provider": "autodl",
        "net_check_urls": [],  # the demo box is this machine: no point probing the internet
        "search_paths": [home], "artifact_paths": [], "temp_dirs": [os.path.join(home, "tmp")],
        "cache_dirs": [os.path.join(home, ".cache")],
        "autostop": {"allowed": True, "idle_minutes": 30, "grace_seconds": 60},
        "release_command": "echo 'demo: this is where shutdown -h now would run'"}}},
        path=path)
