"""Build the probe zipapp in memory from the installed ``remote_probe`` package.

The zip is deterministic (sorted names, fixed timestamps), so its sha256 names it:
the box keeps ``probe-<sha256>.pyz`` and a reconnect with the same gputui uploads
nothing. NVIDIA's ``pynvml`` module is bundled so the box needs no pip install.
"""

import functools
import hashlib
import importlib.util
import io
import os
import zipfile

import remote_probe

# the zipapp's __main__.py: remote_probe/zip_main.py with the bundle's file names written in
MAIN_SOURCE = os.path.join(os.path.dirname(os.path.abspath(remote_probe.__file__)), "zip_main.py")
MAIN_FILES = b"FILES = None"
EPOCH = (1980, 1, 1, 0, 0, 0)
SHIPPED_SUFFIXES = (".py", ".json")


def _package_files():
    root = os.path.dirname(os.path.abspath(remote_probe.__file__))
    base = os.path.dirname(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(SHIPPED_SUFFIXES):
                path = os.path.join(dirpath, name)
                yield os.path.relpath(path, base).replace(os.sep, "/"), path


def _add(zf, name, data):
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    zf.writestr(info, data)


@functools.lru_cache(maxsize=1)
def build_probe():
    """-> (zip bytes, sha256 hex). Cached: the installed package does not change."""
    files = []
    for name, path in _package_files():
        with open(path, "rb") as f:
            files.append((name, f.read()))
    spec = importlib.util.find_spec("pynvml")
    if spec is not None and spec.origin:
        with open(spec.origin, "rb") as f:
            files.append(("pynvml.py", f.read()))
    with open(MAIN_SOURCE, "rb") as f:
        main = f.read()
    if main.count(MAIN_FILES) != 1:  # a build bug, not a user's problem: say it loudly
        raise RuntimeError("%s must hold %r exactly once" % (MAIN_SOURCE, MAIN_FILES))
    main = main.replace(MAIN_FILES, b"FILES = " + repr(tuple(n for n, _ in files)).encode())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        _add(zf, "__main__.py", main)
        for name, data in files:
            _add(zf, name, data)
    data = buf.getvalue()
    return data, hashlib.sha256(data).hexdigest()


def probe_filename(sha):
    return "probe-%s.pyz" % sha
