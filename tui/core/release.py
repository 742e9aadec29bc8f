"""Gathering and fixing for the shutdown checklist, shared by the Release screen and
`gputui checklist`: the probe collects, the laptop downloads and verifies."""

import os
import time

from remote_probe import protocol
from tui.core import checklist
from tui.core.billing import format_money
from tui.core.transfer import download, sha256_file


class Release:
    def __init__(self, host, session, host_cfg, preset, session_key):
        self.host = host
        self.session = session  # a RemoteSession that is open
        self.cfg = host_cfg
        self.preset = preset
        self.base = checklist.download_base(host, session_key)
        self.facts = None
        self.corrupt = set()
        self.waived = set()
        self.results = []

    async def gather(self):
        params = {"artifact_paths": list(self.cfg.artifact_paths)}
        if self.cfg.search_paths:
            params["roots"] = list(self.cfg.search_paths)
        if self.cfg.temp_dirs:
            params["temp_dirs"] = list(self.cfg.temp_dirs)
        if self.cfg.cache_dirs:
            params["cache_dirs"] = list(self.cfg.cache_dirs)
        reply = await self.session.request(protocol.CHECKLIST, timeout=120, **params)
        self.facts = reply["facts"]
        return self.facts

    def items(self, gpus, procs, tmux_sessions, autostop, figures):
        fmt_money = lambda v: format_money(v, self.cfg.currency)  # noqa: E731
        items, self.statuses = checklist.build(
            self.facts, gpus, procs, tmux_sessions, self.base, self.preset, autostop, figures,
            fmt_money, corrupt=self.corrupt, waived=self.waived)
        return items

    def to_download(self):
        return [s for s in self.statuses if s["state"] in ("missing", "stale") or s["path"] in self.corrupt]

    async def download_missing(self, progress=None):
        """progress(file_index, n_files, path, done, size, total_done, total_size)."""
        todo = self.to_download()
        if not todo:
            return []
        shas = (await self.session.request(protocol.SHA256, timeout=600,
                                           paths=[s["path"] for s in todo]))["sha256"]
        total = sum(s["size"] for s in todo)
        finished = 0
        results = []
        async with self.session.file_client() as sftp:
            for i, s in enumerate(todo):
                def on_progress(done, size, i=i, s=s):
                    if progress:
                        progress(i, len(todo), s["path"], done, size, finished + done, total)
                force = s["path"] in self.corrupt
                if force and s.get("local") and os.path.exists(s["local"]):
                    os.replace(s["local"], s["local"] + ".corrupt-%d" % time.time())
                r = await download(sftp, s["path"], self.base, s["size"], s["mtime"],
                                   expected_sha=shas.get(s["path"]), progress=on_progress, force=force)
                finished += s["size"]
                if r.status in ("downloaded", "resumed"):
                    self.corrupt.discard(s["path"])
                results.append(r)
        self.results = results
        return results

    async def verify(self):
        """sha256 of every downloaded artifact against the box's: finds corrupt copies."""
        here = [s for s in self.statuses if s["state"] == "same"]
        if not here:
            return []
        shas = (await self.session.request(protocol.SHA256, timeout=600,
                                           paths=[s["path"] for s in here]))["sha256"]
        bad = [s["path"] for s in here if sha256_file(s["local"]) != shas.get(s["path"])]
        self.corrupt = set(bad)
        return bad

    async def capture_env(self):
        reply = await self.session.request(protocol.ENV_CAPTURE, timeout=300,
                                           **({"python": self.cfg.python} if self.cfg.python else {}))
        env_dir = os.path.join(self.base, "env")
        os.makedirs(env_dir, exist_ok=True)
        saved = []
        if reply.get("pip_freeze") is not None:
            with open(os.path.join(env_dir, "pip-freeze.txt"), "w") as f:
                f.write("# %s on %s, %s\n%s" % (reply.get("python"), self.host, time.strftime("%Y-%m-%d %H:%M"),
                                                reply["pip_freeze"]))
            saved.append("pip-freeze.txt")
        if reply.get("conda_env"):
            with open(os.path.join(env_dir, "conda-env.yml"), "w") as f:
                f.write(reply["conda_env"])
            saved.append("conda-env.yml")
        if not saved:
            raise RuntimeError("nothing captured: %s" % (reply.get("pip_error") or "pip freeze failed"))
        return saved

    def kill_refused(self):
        """Why killing is not allowed here (said before asking, not after), or None."""
        if not self.cfg.allow_kill:
            return ("killing processes is off for %s: set allow_kill = true for this host in "
                    "the config" % self.host)
        return None

    def delete_refused(self):
        if not self.cfg.allow_delete:
            return ("deleting files is off for %s: set allow_delete = true for this host in "
                    "the config" % self.host)
        return None

    async def kill(self, pid):
        if self.kill_refused():
            raise PermissionError(self.kill_refused())
        return (await self.session.request(protocol.KILL, timeout=30, pid=pid))["result"]

    def temp_paths(self):
        return [t["path"] for t in (self.facts or {}).get("temp") or []
                if t["size"] >= checklist.TEMP_WARN_BYTES or t["kind"] in ("temp", "core dump")]

    async def delete_temp(self, paths):
        if self.delete_refused():
            raise PermissionError(self.delete_refused())
        allowed = self.temp_paths()
        return (await self.session.request(protocol.DELETE, timeout=120, paths=paths,
                                           allowed=allowed))["deleted"]

    async def release(self):
        command = self.preset.release_command if self.preset else None
        if not command:
            raise RuntimeError("no release command known for %s: set release_command in the config"
                               % self.host)
        return await self.session.request(protocol.RELEASE, timeout=180, command=command)

    def summary(self, items):
        return {i.key: {"verdict": i.verdict, "reason": i.reason, "waived": i.waived} for i in items}
