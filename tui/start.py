"""The gputui process's first module: the console script `gputui` and `python -m tui` start here.

Python's cyclic garbage collector runs every few hundred new objects; while gputui starts up,
importing some 400 modules (asyncio, asyncssh, cryptography, its own) makes hundreds of
thousands of objects that all live to the end, so each of those collections walks a growing heap
for nothing: ~40 ms of a warm `gputui status`'s ~270 ms of CPU on a 2-core VM (issue 38). The
collector is off from here until tui.cli's main() turns it back on for the commands that run
long enough to make garbage that matters (the app, transfers, the exporter); the quick ones
(QUICK_COMMANDS there) end with it off. Tests call main() in their own process: this module
is not involved, and the collector stays as they have it."""

import gc


def main():
    gc.disable()
    from tui.cli import entry
    entry()
