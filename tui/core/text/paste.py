"""Commands gputui prints for the user to paste (bash, zsh and fish read the same words).

The rule lives in remote_probe.wire.paste_words so the probe quotes the commands it prints
(autostop's cancel command) the same way.
"""

import shlex

from remote_probe.wire.paste_words import join, quote

__all__ = ["join", "quote", "box_path_word"]


def box_path_word(path: str) -> str:
    """A path on the box as one sh word: absolute as it is; `~`, `~/x` and a relative path under
    the box user's $HOME (`--remote-dir '~/x'` made a folder named `~` when only relative paths
    were put under $HOME). shlex quoting: this word goes into sh scripts, not pasted commands."""
    if path.startswith("/"):
        return shlex.quote(path)
    if path == "~" or path.startswith("~/"):
        path = path[2:]
    return '"$HOME"/' + shlex.quote(path) if path else '"$HOME"'


# Bytes left as they are in any_shell's encoding: read literally inside sh double quotes,
# inside the single quotes of sh, bash, zsh, fish, csh and tcsh, and by printf %b.
_PLAIN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 _./,:=+-@")


def any_shell(script: str) -> str:
    """A one-line command that runs the POSIX sh `script` whatever the box user's login shell
    (sshd runs commands as `$SHELL -c COMMAND`): bash, zsh, dash, busybox sh, fish, csh and
    tcsh. A plain `/bin/sh -c '<script>'` fails in csh/tcsh on the first newline inside
    quotes ("Unmatched '"); fish reads backslashes in single quotes. Here the script travels
    as printf %b octal escapes with no quote, newline, `$` or `!` of its own, and sh decodes it.
    stdin is left alone (the probe's upload reads it)."""
    data = script.encode("utf-8")
    enc = "".join(chr(b) if b in _PLAIN else "\\0%03o" % b for b in data)
    return "/bin/sh -c 'eval \"$(printf %%b \"%s\")\"'" % enc
