"""Commands gputui prints for the user to paste (bash, zsh and fish read the same words).

The rule lives in remote_probe.wire.paste_words so the probe quotes the commands it prints
(autostop's cancel command) the same way.
"""

from remote_probe.wire.paste_words import join, quote

__all__ = ["join", "quote"]
