"""Gathering and fixing for the shutdown checklist, shared by the Release screen and
`gputui checklist`: the probe collects, the laptop downloads and verifies."""

import asyncio
import dataclasses
import functools
import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Set

from remote_probe import wire
from tui.core import providers
from tui.core.checks import checklist
from tui.core.billing.rates import format_money
from tui.core.text.boxtext import visible
from tui.core.config import HostConfig
from tui.core.i18n import _
from tui.core.model import ConnState
from tui.core.private import make_private_dir, write_private_file
from tui.core.transfer.download import (
    PART_SUFFIX,
    RESERVE_BYTES,
    NotRegular,
    download,
    free_bytes,
    sha256_file,
    size_text,
)


RESUME_TRIES = 3  # automatic resumes of one file after the link dropped
RECONNECT_WAIT = 120.0  # seconds to wait for the session to be live again
RESUME_PAUSE = 0.5


def free_space_problem(base: str, todo: Sequence[Dict[str, Any]]) -> Optional[str]:
    """One line if the artifacts still to download do not fit on the laptop, else None."""
    need = 0
    for s in todo:
        part = (s.get("local") or "") + PART_SUFFIX
        have = os.path.getsize(part) if s.get("local") and os.path.isfile(part) else 0
        need += max(0, s["size"] - have)
    free = free_bytes(base)
    if need + RESERVE_BYTES > free:
        return (_("the downloads need %s and the disk of %s has %s free: free some space first "
                  "(files that fit are still downloaded, smallest first)") % (
                    size_text(need), base, size_text(free)))
    return None


class Release:
    def __init__(self, host: str, session: Any, host_cfg: HostConfig, preset: Any,
                 session_key: str) -> None:
        self.host = host
        self.session = session  # a RemoteSession that is open
        self.cfg = host_cfg
        self.preset = preset
        self.base = checklist.download_base(host, session_key)
        self.facts: Optional[Dict[str, Any]] = None
        self.corrupt: Set[str] = set()
        self.waived: Set[str] = set()
        self.results: List[Any] = []
        self.statuses: List[Dict[str, Any]] = []

    async def gather(self) -> Dict[str, Any]:
        params: Dict[str, Any] = {"artifact_paths": list(self.cfg.artifact_paths)}
        if self.cfg.search_paths:
            params["roots"] = list(self.cfg.search_paths)
        if self.cfg.temp_dirs:
            params["temp_dirs"] = list(self.cfg.temp_dirs)
        if self.cfg.cache_dirs:
            params["cache_dirs"] = list(self.cfg.cache_dirs)
        reply = await self.session.request(wire.CHECKLIST, timeout=120, **params)
        facts: Dict[str, Any] = reply["facts"]
        self.facts = facts
        return facts

    def items(self, gpus: Any, procs: Any, tmux_sessions: Any, autostop: Any, figures: Any,
              watched: Any = ()) -> List[Any]:
        currency = getattr(figures, "currency", None) or self.cfg.currency  # the provider's price: USD

        def fmt_money(v: Optional[float]) -> str:
            return format_money(v, currency)
        items, self.statuses = checklist.build(
            self.facts or {}, gpus, procs, tmux_sessions, self.base, self.preset, autostop, figures,
            fmt_money, corrupt=self.corrupt, waived=self.waived, watched=watched)
        return items

    def to_download(self) -> List[Dict[str, Any]]:
        return [s for s in self.statuses if s["state"] in ("missing", "stale") or s["path"] in self.corrupt]

    def space_problem(self) -> Optional[str]:
        """Before any download: does everything still missing fit on this laptop?"""
        return free_space_problem(self.base, self.to_download())

    async def download_missing(self, progress: Optional[Callable[..., None]] = None) -> List[Any]:
        """progress(file_index, n_files, path, done, size, total_done, total_size).

        Each artifact on its own: one that fails (no space, a FIFO, a stall, an SFTP
        error) is reported in its Result and the next one still downloads. A stall
        leaves the SFTP channel busy on the box, so the next file gets a new one."""
        todo = self.to_download()
        if not todo:
            return []
        # Free space first (it costs nothing), then each file: the box hashes it while its
        # bytes flow (it used to hash every artifact before the first byte moved).
        if free_space_problem(self.base, todo):
            todo.sort(key=lambda s: s["size"])  # as many whole files as fit
        total = sum(s["size"] for s in todo)
        finished = 0
        results: List[Any] = []
        i = tries = 0
        while i < len(todo):
            try:
                async with self.session.file_client() as sftp:
                    while i < len(todo):
                        s = todo[i]

                        def on_progress(done: int, size: int, i: int = i, s: Dict[str, Any] = s) -> None:
                            if progress:
                                progress(i, len(todo), s["path"], done, size, finished + done, total)
                        force = s["path"] in self.corrupt
                        if force and s.get("local") and os.path.exists(s["local"]):
                            os.replace(s["local"], s["local"] + ".corrupt-%d" % time.time())
                            self.corrupt.discard(s["path"])  # moved aside: a retry resumes
                        r = await download(sftp, s["path"], self.base, s["size"], s["mtime"],
                                           expected_sha=functools.partial(self._box_sha, s["path"]),
                                           progress=on_progress, force=force)
                        if r.status == "failed" and tries < RESUME_TRIES and \
                                await self._back_online(RECONNECT_WAIT):
                            tries += 1  # the link dropped mid-file: resume the .part, by itself
                            break
                        finished += s["size"]
                        i += 1
                        tries = 0
                        if r.status in ("downloaded", "resumed"):
                            self.corrupt.discard(s["path"])
                        results.append(r)
                        if r.stalled:
                            break  # a fresh file channel for the rest
            except Exception:  # noqa: BLE001 - no file channel while reconnecting
                if tries >= RESUME_TRIES or not await self._back_online(RECONNECT_WAIT):
                    raise
                tries += 1
        self.results = results
        return results

    async def _box_sha(self, path: str) -> Optional[str]:
        reply = await self.session.request(wire.SHA256, timeout=600, paths=[path])
        return (reply.get("sha256") or {}).get(path)

    async def _back_online(self, timeout: float) -> bool:
        """After a failed file: True once the session is live again (it reconnects by
        itself) within `timeout` s, False if it is gone for good or took too long."""
        deadline = time.monotonic() + timeout
        await asyncio.sleep(RESUME_PAUSE)  # a drop is seen a moment after the read failed
        while time.monotonic() < deadline:
            state = getattr(self.session, "state", ConnState.LIVE)
            client = getattr(self.session, "client", None)  # "live" lags a dead link a little
            if state == ConnState.LIVE and (client is None or not client.closed.is_set()):
                return True
            if state in (ConnState.FAILED, ConnState.CLOSED):
                return False
            await asyncio.sleep(0.2)
        return False

    async def verify(self) -> List[str]:
        """sha256 of every downloaded artifact against the box's: finds corrupt copies."""
        here = [s for s in self.statuses if s["state"] == "same"]
        if not here:
            return []
        shas = (await self.session.request(wire.SHA256, timeout=600,
                                           paths=[s["path"] for s in here]))["sha256"]
        bad = [s["path"] for s in here if _local_sha(s["local"]) != shas.get(s["path"])]
        self.corrupt = set(bad)
        return bad

    async def capture_env(self, job_pids: Sequence[int] = ()) -> List[str]:
        """Freeze the environment of the running job (`job_pids`: its processes on the box)
        unless the config names a python; `self.env_frozen` says which interpreter it was."""
        params: Dict[str, Any] = {"python": self.cfg.python} if self.cfg.python else {}
        if job_pids and not self.cfg.python:
            params["pids"] = [int(p) for p in job_pids][:1024]
        reply = await self.session.request(wire.ENV_CAPTURE, timeout=300, **params)
        self.env_frozen = checklist.env_frozen_text(reply)
        env_dir = os.path.join(self.base, "env")
        make_private_dir(env_dir)
        saved = []
        if reply.get("pip_freeze") is not None:
            write_private_file(os.path.join(env_dir, "pip-freeze.txt"), "# %s on %s, %s\n%s" % (
                visible(str(reply.get("python"))), self.host, time.strftime("%Y-%m-%d %H:%M"),
                reply["pip_freeze"]))
            saved.append("pip-freeze.txt")
        if reply.get("conda_env"):
            write_private_file(os.path.join(env_dir, "conda-env.yml"), reply["conda_env"])
            saved.append("conda-env.yml")
        if not saved:
            raise RuntimeError(_("nothing captured: %s") % (reply.get("pip_error") or _("pip freeze failed")))
        return saved

    env_frozen = ""

    def kill_refused(self) -> Optional[str]:
        """Why killing is not allowed here (said before asking, not after), or None."""
        if not self.cfg.allow_kill:
            return (_("killing processes is off for %s: set allow_kill = true for this host in "
                      "the config") % self.host)
        return None

    def delete_refused(self) -> Optional[str]:
        if not self.cfg.allow_delete:
            return (_("deleting files is off for %s: set allow_delete = true for this host in "
                      "the config") % self.host)
        return None

    async def kill(self, pid: int) -> Any:
        refused = self.kill_refused()
        if refused:
            raise PermissionError(refused)
        return (await self.session.request(wire.KILL, timeout=30, pid=pid))["result"]

    def temp_paths(self) -> List[str]:
        return [t["path"] for t in (self.facts or {}).get("temp") or []
                if t["size"] >= checklist.TEMP_WARN_BYTES or t["kind"] in ("temp", "core dump")]

    async def delete_temp(self, paths: List[str]) -> Any:
        refused = self.delete_refused()
        if refused:
            raise PermissionError(refused)
        allowed = self.temp_paths()
        return (await self.session.request(wire.DELETE, timeout=120, paths=paths,
                                           allowed=allowed))["deleted"]

    async def release(self) -> Any:
        command = self.preset.release_command if self.preset else None
        if not command:
            raise RuntimeError(_("no release command known for %s: set release_command in the config")
                               % self.host)
        return await self.session.request(wire.RELEASE, timeout=180, command=command)

    def summary(self, items: Sequence[Any]) -> Dict[str, Dict[str, Any]]:
        return {i.key: {"verdict": i.verdict, "reason": i.reason, "waived": i.waived} for i in items}


@dataclasses.dataclass(frozen=True)
class ActionChoice:
    """One release action as the Release screen offers it: what it runs, keeps, wipes, bills."""
    key: str
    label: str  # translated
    lines: List[str]  # providers.action_lines of that action: runs / keeps / wipes / bills / clock
    warning: Optional[str]  # providers.release_warning, shown before anything runs
    runs_on_box: bool  # False: the console or the provider's API only (needs the user's key)
    chosen: bool


def release_choices(preset: Any, facts: Optional[Dict[str, Any]] = None) -> List[ActionChoice]:
    """Every action the box's provider offers, the chosen one marked (issue 22)."""
    if preset is None:
        return []
    chosen = preset.chosen
    out = []
    for a in preset.actions:
        p = preset.with_action(a.key)
        out.append(ActionChoice(a.key, _(a.label), providers.action_lines(p)[1:],
                                providers.release_warning(p, facts), bool(a.command),
                                chosen is not None and a.key == chosen.key))
    return out


def needs_choice(preset: Any, host_cfg: HostConfig, chosen_here: bool) -> bool:
    """Ask which action before releasing: the provider offers more than one, and neither the
    config (release_action, or a release_command of its own) nor this screen has said."""
    return bool(preset is not None and preset.has_choice and not chosen_here
                and not host_cfg.release_action and not host_cfg.release_command)


def action_command_text(preset: Any) -> str:
    """The release command with the provider action it performs, for dialogs that show what
    will run: 'runpodctl pod stop … (RunPod stop)'. The command alone for a custom one."""
    command = preset.release_command or ""
    chosen = preset.chosen if preset is not None else None
    if chosen is None or command != chosen.command:
        return command
    return "%s   (%s %s)" % (command, preset.name, _(chosen.label))


def _local_sha(path: str) -> Optional[str]:
    """sha256 of a local copy; None when it is not a regular file (never blocks on a FIFO)."""
    try:
        return sha256_file(path)
    except (NotRegular, OSError):
        return None
