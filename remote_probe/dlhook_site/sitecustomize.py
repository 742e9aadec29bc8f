"""gputui's dataloader hook entry point (this directory is put on PYTHONPATH).

Installs the hook, then runs the sitecustomize this one shadows (Debian's, conda's) so
the environment behaves exactly as without gputui.
"""


def _gputui_chain():
    import importlib.machinery
    import importlib.util
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        import gputui_dlhook
        gputui_dlhook.install()
    except Exception:  # noqa: BLE001 - the hook is optional; the program is not
        pass
    others = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    except Exception:  # noqa: BLE001
        spec = None
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception:  # noqa: BLE001 - theirs failing is theirs, like without us
            pass


_gputui_chain()
del _gputui_chain
