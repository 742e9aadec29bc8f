"""gputui's probe: the small stdlib-only program that runs on the rented box.

It is shipped as a zipapp (see ``tui.remote.probe.bundle``) and must run on Python 3.8+
with nothing installed. ``pynvml`` is bundled next to it in the zip.
"""

__version__ = "0.1.0"
