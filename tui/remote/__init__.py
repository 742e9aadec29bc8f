"""Reaching the box: ssh, session and reconnect, probe deploy and client, the demo box."""

from tui.remote import asyncssh_import  # noqa: F401,E402 - asyncssh's import without its slowest step
