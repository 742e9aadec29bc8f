"""The probe zipapp's ``__main__.py`` (tui/remote/probe/bundle.py copies this file there and
writes the bundle's file names into FILES; nothing imports it from the package).

Python keeps no bytecode for modules it imports from a zip: every attach and every daemon start
compiled the whole probe again (0.07-0.1 s of CPU each, on the box the user pays for). So the
first start unpacks the zipapp beside itself (``probe-<sha>.d``, named by the same sha) and every
start imports from there, where python keeps ``__pycache__``. The copy is made in a private
temporary directory and renamed into place whole; one that is not ours, not private or missing a
file (a /tmp cleaner) is made again; and when none can be made (a read-only or full disk) the
probe simply imports from the zip, as before."""

import os
import sys

FILES = None  # the bundle's file names, written in by probe_bundle.build_probe


def _ours(path):
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022 and os.path.isdir(path) \
        and not os.path.islink(path)


def _complete(home, files):
    return all(os.path.isfile(os.path.join(home, name)) for name in files)


def unpacked(pyz, files):
    """The directory to import the probe from instead of the zip, or None."""
    if not pyz.endswith(".pyz") or not files:
        return None
    home = pyz[:-4] + ".d"
    if _ours(home) and _complete(home, files):
        return home
    import shutil
    tmp = "%s.tmp-%d" % (home, os.getpid())
    try:
        import zipfile
        os.mkdir(tmp, 0o700)
        with zipfile.ZipFile(pyz) as zf:
            zf.extractall(tmp)
        # a good copy another start put in place meanwhile stays (it may be importing from
        # it); only a broken or foreign one is moved away
        if os.path.lexists(home) and not (_ours(home) and _complete(home, files)):
            old = "%s.old-%d" % (home, os.getpid())
            os.rename(home, old)
            if os.path.islink(old):
                os.unlink(old)
            else:
                shutil.rmtree(old, ignore_errors=True)
        os.rename(tmp, home)  # refused where a copy is in place by now: that one is used
    except Exception:  # whatever went wrong, the zip still runs
        pass
    shutil.rmtree(tmp, ignore_errors=True)
    return home if _ours(home) and _complete(home, files) else None


class ZipFallback:
    """The zip answers for a module missing from the unpacked copy: a daemon started from the
    copy imports some modules only when first asked (the checklist's), and a /tmp cleaner may
    have taken exactly those files since; the next start remakes the copy."""

    def __init__(self, pyz):
        self.pyz = pyz

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in ("remote_probe", "pynvml"):
            return None
        import zipimport
        try:
            zi = zipimport.zipimporter(os.path.join(self.pyz, *name.split(".")[:-1]))
            find_spec = getattr(zi, "find_spec", None)  # Python 3.10+
            if find_spec is not None:
                return find_spec(name)
            if zi.find_module(name) is None:  # 3.8, 3.9
                return None
            import importlib.util
            return importlib.util.spec_from_loader(name, zi, is_package=zi.is_package(name))
        except Exception:  # not in the zip either: the import error stays the normal one
            return None


if __name__ == "__main__":
    _pyz = os.path.abspath(sys.argv[0])
    _home = unpacked(_pyz, FILES)
    if _home:
        sys.path.insert(0, _home)
        sys.meta_path.append(ZipFallback(_pyz))
    from remote_probe.__main__ import entry
    entry()
