"""gputui: the laptop side (CLI, Textual app, SSH session, probe deployment)."""

from remote_probe import __version__

__all__ = ["__version__"]
