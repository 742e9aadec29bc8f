"""The daemon's requests: one function per request type, registered in HANDLERS.

Like sshuttle's server.py: a table, not a class with seventeen methods. Each handler is
``async def on_x(daemon, client, msg)`` and returns the reply's fields, server.NO_REPLY
(it answered itself) or raises server.RequestError; server.dispatch() turns all of them,
and any bug, into an answer. Parameters were already held to wire.schema's
REQUEST_SCHEMAS; the checks here are the second line. Slow or destructive work runs off
the event loop. Destructive requests only arrive after the user confirmed them in the app
and enabled them for the host in the config; the probe still checks the arguments.
"""

import asyncio
import functools
import os
import time

from remote_probe import tmux_control as tmux, wire
from remote_probe.autostop import supervise
from remote_probe.files import filexfer
from remote_probe.daemon_secret import on_prove
from remote_probe.dlhook import dlhook_env
from remote_probe.server import NO_REPLY, RequestError, request_id

HANDLERS = {wire.PROVE: on_prove}  # the direct path's proof (daemon_secret.py)


def handles(*kinds):
    def register(fn):
        for kind in kinds:
            HANDLERS[kind] = fn
        return fn
    return register


def bound(daemon):
    """The dispatch table of one daemon: request type -> handler(client, msg)."""
    return {kind: functools.partial(fn, daemon) for kind, fn in HANDLERS.items()}


def strings(msg, key):
    value = msg.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RequestError("%s: expected a list of strings" % key)
    return value


def in_use_message(config, sessions):
    return ("the probe daemon on this box runs %s (gputui %s) for %d other live session%s; "
            "it was left running. Close the other session, or use another --remote-dir."
            % (config.get("backend"), config.get("version"), sessions, "" if sessions == 1 else "s"))


async def off_loop(work, pool=None):
    """Run `work` in a thread; the errors it may raise for a bad request become the answer."""
    try:
        return await asyncio.get_running_loop().run_in_executor(pool, work)
    except (ValueError, TypeError, OSError) as exc:
        raise RequestError(str(exc))


# ---------------------------------------------------------------- session
@handles(wire.HELLO)
async def on_hello(daemon, client, msg):
    problem = wire.check_compatible(msg)
    if problem:
        raise RequestError(problem)
    return NO_REPLY  # a compatible client's hello needs no answer


@handles(wire.PING)
async def on_ping(daemon, client, msg):
    return {"t": time.time()}


@handles(wire.SNAPSHOT)
async def on_snapshot(daemon, client, msg):
    latest = daemon.latest or {}
    pids = wire.proc_pids(latest)
    sample = daemon.latest
    if sample is not None and "disks" not in sample.get("host", {}):
        sample = dict(sample, host=dict(sample.get("host", {}),
                                        disks=daemon.inventory.get("disks", [])))
    # a one-shot answer deserves a fresh scan, not one up to JOBS_EVERY ticks old
    jobs = await asyncio.get_running_loop().run_in_executor(daemon.tmux_pool, daemon.scan_jobs)
    daemon.jobs = jobs
    return {"inventory": daemon.inventory, "sample": sample,
            "proc_meta": daemon.sampler.proc_meta(pids), "jobs": jobs,
            "autostop": daemon.autostop.status(),
            "clocks": daemon.watch.clocks(time.time())}  # clocks.py: spot notice, balance


@handles(wire.SUBSCRIBE)
async def on_subscribe(daemon, client, msg):
    # No await before the backlog is queued and the flag set: no tick can slip between.
    since = msg.get("since_seq") or 0
    if not wire.is_int(since):
        since = 0
    backlog = daemon.history.backlog(since, daemon.seq)
    daemon.server.send_reply(client, {
        "type": wire.REPLY, "id": request_id(msg), "inventory": daemon.inventory,
        "backlog": len(backlog), "last_seq": daemon.seq,
        "first_seq": daemon.history.first_seq(), "autostop": daemon.autostop.status(),
        "autostop_events": daemon.autostop.events(), "jobs": daemon.jobs})
    daemon.send_meta(client, wire.proc_pids(daemon.latest or {}))
    daemon.server.send_backlog(client, backlog)
    client.subscribed = True
    return NO_REPLY


@handles(wire.UNSUBSCRIBE)
async def on_unsubscribe(daemon, client, msg):
    client.subscribed = False
    return {}


@handles(wire.SHUTDOWN)
async def on_shutdown(daemon, client, msg):
    others = [c for c in daemon.server.subscribers() if c is not client]
    if others and msg.get("only_if_unused"):
        # A client with other settings wants its own daemon: not while sessions use
        # this one (two laptops would replace each other's daemon in a loop).
        config = wire.config_key(daemon.simulate)
        raise RequestError(in_use_message(config, len(others)), in_use=len(others), config=config)
    # a deliberate stop (a redeploy, the demo's exit): the autostop watcher must not start
    # this daemon again; a daemon started after us re-arms from the state file with its own
    supervise.stop_supervisor(daemon.state_dir)
    daemon.stop_event.set()  # first: a client that hangs up at once still stops us
    daemon.server.send_reply(client, {"type": wire.REPLY, "id": request_id(msg), "stopping": True})
    try:
        await client.writer.drain()
    except (ConnectionError, OSError):
        pass
    return NO_REPLY


# ---------------------------------------------------------------- autostop
@handles(wire.AUTOSTOP_ARM)
async def on_autostop_arm(daemon, client, msg):
    job = msg.get("when_job_done")
    if isinstance(job, str) and not any(r.get("id") == job for r in daemon.watch.rows):
        # a job started a moment ago: judge the jobs now rather than refuse it
        await asyncio.get_running_loop().run_in_executor(daemon.tmux_pool, daemon.rescan_jobs)
    try:
        status = daemon.autostop.arm(
            msg.get("command"), idle_seconds=msg.get("idle_seconds"),
            deadline=msg.get("deadline"), grace=msg.get("grace", 120.0),
            threshold=msg.get("threshold", 5.0), when_job_done=_job_to_wait_for(daemon, msg),
            hung_counts_idle=bool(msg.get("hung_counts_idle")), action=msg.get("action"),
            verify_s=msg.get("verify_s"), at_budget=bool(msg.get("at_budget")))
    except (ValueError, TypeError, OSError) as exc:
        raise RequestError(str(exc))
    return {"autostop": status}


def _job_to_wait_for(daemon, msg):
    """"Release when this job ends": only a job the box's watch lists now."""
    job = msg.get("when_job_done")
    if job is None:
        return None
    if not isinstance(job, str) or not any(r.get("id") == job for r in daemon.watch.rows):
        raise ValueError("when_job_done: no job %r on this box (see the jobs' watch list)" % (job,))
    return job


@handles(wire.AUTOSTOP_DISARM)
async def on_autostop_disarm(daemon, client, msg):
    reason = msg.get("reason") if isinstance(msg.get("reason"), str) else None
    return {"autostop": daemon.autostop.disarm(reason or "cancelled from gputui")}


@handles(wire.AUTOSTOP_STATUS)
async def on_autostop_status(daemon, client, msg):
    return {"autostop": daemon.autostop.status(), "events": daemon.autostop.events()}


@handles(wire.RELEASE)
async def on_release(daemon, client, msg):
    from remote_probe.autostop import policy as autostop
    command = msg.get("command")
    if not isinstance(command, str) or not command.strip():
        raise RequestError("no release command")

    def work():
        daemon.autostop.log("release", command=command)
        code, output = autostop.run_release(command)
        # still up on this boot after the verify window: an alarm (release_verify.py)
        daemon.autostop.record_release(command, code, "release", msg.get("verify_s"))
        daemon.autostop.log("released", command=command, exit=code, output=output[-2000:])
        return {"exit": code, "output": output[-4000:]}
    return await off_loop(work)


# ---------------------------------------------------------------- notifications
@handles(wire.NOTIFY_CONFIG)
async def on_notify_config(daemon, client, msg):
    """The laptop's notification settings. The reply names channels redacted; the URLs
    themselves are stored 0600 and never leave the box again."""
    return await off_loop(lambda: daemon.watch.configure(msg))


@handles(wire.NOTIFY_TEST)
async def on_notify_test(daemon, client, msg):
    if daemon.watch.notifier is None:
        raise RequestError("notifications are off on this box: its state directory is not private")
    return await off_loop(daemon.watch.notifier.test)


@handles(wire.PROVIDER_PRICE)
async def on_provider_price(daemon, client, msg):
    """The price and balance from the provider's API, read here with the key PID 1 carries
    (issue 22): only figures go back, never the key. Cached a few minutes; off the loop."""
    from remote_probe.provider import api as provider_api
    cache = provider_api.daemon_cache(daemon)
    return {"price": await off_loop(lambda: cache.get(fresh=msg.get("fresh") is True))}


# ---------------------------------------------------------------- doctor, checklist
@handles(wire.PREFLIGHT)
async def on_preflight(daemon, client, msg):
    """Slow (a matmul per GPU): runs in its own thread, the connection stays live."""
    from remote_probe import preflight_facts as preflight
    urls = msg.get("urls")
    if not (isinstance(urls, list) and all(isinstance(u, str) for u in urls)):
        urls = list(preflight.DEFAULT_URLS)
    python = msg.get("python") if isinstance(msg.get("python"), str) else None
    loop = asyncio.get_running_loop()
    facts = await loop.run_in_executor(
        None, lambda: preflight.collect(python, bool(msg.get("smoke", True)), urls))
    facts["inventory"] = daemon.inventory
    facts["topology"] = preflight.topology_of(daemon.backend)  # NVLink/PCIe/P2P between GPUs
    return {"facts": facts}


@handles(wire.CHECKLIST)
async def on_checklist(daemon, client, msg):
    from remote_probe.files import checklist_facts as checklist
    temp = strings(msg, "temp_dirs") if "temp_dirs" in msg else None
    caches = strings(msg, "cache_dirs") if "cache_dirs" in msg else None
    roots, paths = strings(msg, "roots") or None, strings(msg, "artifact_paths")
    return {"facts": await off_loop(lambda: checklist.collect(roots, paths, temp, caches))}


@handles(wire.SHA256)
async def on_sha256(daemon, client, msg):
    from remote_probe.files import checklist_facts as checklist
    paths = strings(msg, "paths")
    return {"sha256": await off_loop(lambda: {p: checklist.sha256_of(p) for p in paths},
                                     daemon.bulk_pool)}


@handles(wire.KILL)
async def on_kill(daemon, client, msg):
    from remote_probe.files import checklist_facts as checklist
    pid = msg.get("pid")
    if not wire.is_int(pid) or pid <= 1 or pid in daemon.sampler.own_pids:
        raise RequestError("refusing to kill pid %r" % (pid,))
    result = await off_loop(lambda: checklist.kill(pid))
    # the jobs scan now, in the next sample: the checklist drops the killed job at once, not a
    # scan (up to JOBS_EVERY ticks) later, when it looked as if the kill had not worked
    await asyncio.get_running_loop().run_in_executor(daemon.tmux_pool, daemon.rescan_jobs, (pid,))
    return {"result": result}


@handles(wire.DELETE)
async def on_delete(daemon, client, msg):
    from remote_probe.files import checklist_facts as checklist
    paths, allowed = strings(msg, "paths"), strings(msg, "allowed")
    return {"deleted": await off_loop(lambda: checklist.delete(paths, allowed))}


@handles(wire.ENV_CAPTURE)
async def on_env_capture(daemon, client, msg):
    from remote_probe.files import checklist_facts as checklist
    python = msg.get("python") if isinstance(msg.get("python"), str) else None
    pids = [p for p in msg.get("pids") or () if isinstance(p, int)]
    return await off_loop(lambda: checklist.env_capture(python, pids))


@handles(wire.FILE_READ)
async def on_file_read(daemon, client, msg):
    # Over a direct-streamlocal channel there is no attach bridge to answer file reads
    # (see filexfer), so the daemon answers them the same way.
    reply = await off_loop(lambda: filexfer.handle(msg))
    if reply["type"] == wire.ERROR:
        raise RequestError(reply["error"])
    return {k: v for k, v in reply.items() if k not in ("type", "id")}


# ---------------------------------------------------------------- tmux
def _text(msg, key):
    value = msg.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError("%s: expected a non-empty string" % key)
    return value


def _tmux_work(daemon, kind, msg):
    if kind == wire.TMUX_LIST:
        return {"tmux": tmux.status()}
    if kind == wire.TMUX_CAPTURE:
        lines = msg.get("lines")
        lines = lines if wire.is_int(lines) and 0 < lines <= 100000 else 300
        return {"text": tmux.capture(_text(msg, "pane"), lines)}
    if kind == wire.TMUX_NEW:
        env = msg.get("env") if isinstance(msg.get("env"), dict) else {}
        env = {k: v for k, v in env.items() if isinstance(v, str)}
        if msg.get("dlhook"):
            env.update(dlhook_env(daemon.state_dir, os.environ.get("PYTHONPATH")))
        command = msg.get("command") if isinstance(msg.get("command"), str) else ""
        cwd = msg.get("cwd") if isinstance(msg.get("cwd"), str) else None
        return tmux.new_job(_text(msg, "name"), command, cwd, env)
    if kind == wire.TMUX_INTERRUPT:
        tmux.interrupt(_text(msg, "pane"))
    elif kind == wire.TMUX_KILL:
        session = _text(msg, "session")
        daemon.watch.jobs.session_killed(session)  # the user's own kill is no crash to tell
        tmux.kill_session(session)
    elif kind == wire.TMUX_RENAME:
        tmux.rename_session(_text(msg, "session"), _text(msg, "name"))
    elif kind == wire.TMUX_INSTALL:
        return {"output": tmux.install()}
    return {}


@handles(*wire.TMUX_REQUESTS)
async def on_tmux(daemon, client, msg):
    """tmux requests run off the event loop: a slow tmux must not stall sampling.
    Installing tmux (apt, up to 600 s) has its own thread, so scans go on meanwhile."""
    kind = msg["type"]

    def work_then_rescan():
        result = _tmux_work(daemon, kind, msg)
        if kind != wire.TMUX_CAPTURE and kind != wire.TMUX_LIST:
            daemon.rescan_jobs()  # the change shows in the next sample, not ticks later
        return result

    pool = daemon.install_pool if kind == wire.TMUX_INSTALL else daemon.tmux_pool
    try:
        result = await asyncio.get_running_loop().run_in_executor(pool, work_then_rescan)
    except tmux.TmuxMissing as exc:
        raise RequestError(str(exc), install=exc.install)
    except (tmux.TmuxError, ValueError, TypeError) as exc:
        raise RequestError(str(exc))
    return result or {}


# ---------------------------------------------------------------- billing facts (issue 21)
@handles(wire.NOTIFY_BILLING)
async def on_notify_billing(daemon, client, msg):
    """What the box costs, from the laptop: the daemon tells budget 80 % / 100 % and a low
    provider balance itself (budget_watch.py). -> the box's view of the bill now."""
    return await off_loop(lambda: daemon.watch.set_billing(msg, time.time()))


_FILE_WRITES = []  # one asyncio.Lock, made on first use (inside the daemon's loop)


@handles(*wire.FILE_WRITE_REQUESTS)
async def on_file_write(daemon, client, msg):
    # `gputui push` through the probe channel on a direct channel (no attach bridge): the
    # same filexfer_write rules (nothing outside DEST, no symlink followed). One at a time,
    # in arrival order (the lock is fair), so pipelined chunks land in order, as in the bridge.
    if not _FILE_WRITES:
        _FILE_WRITES.append(asyncio.Lock())
    async with _FILE_WRITES[0]:
        reply = await off_loop(lambda: filexfer.handle(msg))
    if reply["type"] == wire.ERROR:
        raise RequestError(reply["error"])
    return {k: v for k, v in reply.items() if k not in ("type", "id")}
