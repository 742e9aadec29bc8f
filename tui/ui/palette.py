"""The command palette (ctrl+p): every action of the screen, found by its name or by words of
what it does. Textual's own provider matches names only, so "price", "bill", "shutdown" or
"kill" found nothing although the rate, release and kill actions say exactly that."""

from typing import Iterable

from textual.command import Hit, Hits
from textual.system_commands import SystemCommandsProvider

DESCRIPTION_SCORE = 0.5  # below a name match: a name hit sorts first


def description_matches(query: str, text: str) -> bool:
    """Every word of the query appears in the text (no fuzzy subsequences: in a sentence
    almost any short query is a subsequence)."""
    words = query.casefold().split()
    folded = text.casefold()
    return bool(words) and all(w in folded for w in words)


def palette_score(query: str, name: str, help_text: str, name_score: float) -> float:
    """The hit's score: the fuzzy name match when there is one, else a description match."""
    if name_score > 0:
        return name_score
    return DESCRIPTION_SCORE if description_matches(query, help_text or "") else 0.0


class ActionsProvider(SystemCommandsProvider):
    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        commands: Iterable = self.app.get_system_commands(self.screen)
        for name, help_text, callback, *_ in commands:
            score = palette_score(query, name, help_text, matcher.match(name))
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
