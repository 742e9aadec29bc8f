"""Downloads from the box over SFTP: resumable, verified, and never clobbering.

* Remote names are never trusted as local paths: `local_path_for` refuses anything
  that would escape the target folder (`..`, NUL, backslashes).
* A download goes to `NAME.part` and continues from its size after an interruption.
* The result is checked against the box's sha256 before it replaces anything.
* A local file newer than the remote one is kept, and said so, never overwritten.
"""

import asyncio
import dataclasses
import hashlib
import os
import re
from typing import Callable, Optional

CHUNK = 16 << 20  # bytes per read call; asyncssh splits it into parallel requests
BLOCK = 256 << 10  # bytes per SFTP request: OpenSSH's sftp-server accepts 256 KiB
MAX_REQUESTS = 64  # requests in flight: keeps a long fat pipe full


class RefusedPath(ValueError):
    pass


def safe_component(text):
    return re.sub(r"[^\w.@+-]", "_", text)[:80] or "_"


def local_path_for(base, remote_path):
    """Where a remote file lands under `base`; RefusedPath if it could escape."""
    if not isinstance(remote_path, str) or not remote_path or "\x00" in remote_path or "\\" in remote_path:
        raise RefusedPath("refusing remote name %r" % (remote_path,))
    parts = [p for p in remote_path.split("/") if p not in ("",)]
    if not parts or any(p in (".", "..") for p in parts):
        raise RefusedPath("refusing remote name %r: it would escape the download folder" % remote_path)
    local = os.path.join(base, *parts)
    real_base = os.path.realpath(base)
    if not os.path.realpath(local).startswith(real_base + os.sep):
        raise RefusedPath("refusing remote name %r: it resolves outside %s" % (remote_path, base))
    return local


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclasses.dataclass
class Result:
    remote: str
    local: str
    status: str  # "downloaded", "resumed", "up to date", "kept newer local", "corrupt", "refused"
    bytes: int = 0
    detail: str = ""


def local_state(local, size, mtime):
    """'missing', 'same' (size equal, not older), 'newer local', 'stale' (differs, older)."""
    try:
        st = os.stat(local)
    except FileNotFoundError:
        return "missing"
    if st.st_size == size and st.st_mtime >= mtime - 1:
        return "same"
    if st.st_mtime > mtime + 1:
        return "newer local"
    return "stale"


async def download(sftp, remote, base, size, mtime, expected_sha: Optional[str] = None,
                   progress: Optional[Callable[[int, int], None]] = None, force=False) -> Result:
    try:
        local = local_path_for(base, remote)
    except RefusedPath as exc:
        return Result(remote, "", "refused", detail=str(exc))
    state = local_state(local, size, mtime)
    if state == "same" and not force:
        return Result(remote, local, "up to date")
    if state == "newer local" and not force:
        return Result(remote, local, "kept newer local",
                      detail="the local copy is newer than the box's; it was not overwritten")
    os.makedirs(os.path.dirname(local), exist_ok=True)
    part = local + ".part"
    offset = os.path.getsize(part) if os.path.exists(part) else 0
    if offset > size:
        os.unlink(part)
        offset = 0
    resumed = offset > 0
    done = offset
    # Hash as the bytes arrive (and what a resumed .part already holds) instead of
    # reading the whole file again afterwards.
    digest = hashlib.sha256()
    if resumed:
        with open(part, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    if progress:
        progress(done, size)
    loop = asyncio.get_running_loop()

    def sink(data):  # hashlib and file writes release the GIL: overlap with the network
        out.write(data)
        digest.update(data)

    async with sftp.open(remote, "rb", block_size=BLOCK, max_requests=MAX_REQUESTS) as f:
        with open(part, "ab") as out:
            pending = None
            while done < size:
                data = await f.read(min(CHUNK, size - done), done)
                if not data:
                    break
                if pending is not None:
                    await pending
                pending = loop.run_in_executor(None, sink, data)
                done += len(data)
                if progress:
                    progress(done, size)
            if pending is not None:
                await pending
    if done != size:
        return Result(remote, local, "corrupt", done, "the box's file changed size during the download")
    if expected_sha:
        got = digest.hexdigest()
        if got != expected_sha:
            os.unlink(part)
            return Result(remote, local, "corrupt", done, "sha256 mismatch (box %s…, local %s…): "
                          "the partial file was removed; download again" % (expected_sha[:12], got[:12]))
    if os.path.exists(local):  # stale or corrupt: keep it beside, never lose a file silently
        os.replace(local, local + ".old")
    os.replace(part, local)
    os.utime(local, (mtime, mtime))
    return Result(remote, local, "resumed" if resumed else "downloaded", done - offset)
