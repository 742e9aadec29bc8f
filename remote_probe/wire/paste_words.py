"""Commands gputui prints for the user to paste: quoted so bash, zsh and fish read the same words.

shlex.quote is POSIX sh only: it leaves `[host]:port` bare (zsh: "no matches found"), and its
single quotes keep backslashes that fish reads as escapes. Here a word is left bare only when
every shell reads it literally; anything else goes in single quotes, with the two characters
fish treats specially inside them (' and \\) written as "'" and "\\\\" between the quoted runs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Iterable, List

# Bare in bash, zsh and fish: no glob ([ ] * ?), brace ({ }), tilde, history (!), `=cmd` (zsh),
# `%job` (fish) or variable expansion.
_SAFE = re.compile(r"[A-Za-z0-9_@+:,./-][A-Za-z0-9_@+:,./=-]*\Z")


def quote(word: Any) -> str:
    """One argument as a shell word that bash, zsh and fish all read back as `word`."""
    word = str(word)
    if _SAFE.match(word):
        return word
    out: List[str] = []
    run: List[str] = []
    for ch in word:
        if ch in "'\\":
            if run:
                out.append("'%s'" % "".join(run))
                run = []
            out.append('"%s"' % ("\\\\" if ch == "\\" else "'"))
        else:
            run.append(ch)
    if run or not out:
        out.append("'%s'" % "".join(run))
    return "".join(out)


def join(argv: Iterable[Any]) -> str:
    """A command line from its words, for every shell (see quote)."""
    return " ".join(quote(a) for a in argv)
