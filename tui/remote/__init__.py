"""Reaching the box: ssh, session and reconnect, probe deploy and client, the demo box."""
