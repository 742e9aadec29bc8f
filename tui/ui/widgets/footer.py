"""Textual's Footer, without the keys it leaks.

Each time a screen's bindings change (focus moves, a modal closes, `refresh_bindings`), the
Footer recomposes: it removes its FooterKeys and builds new ones, each bound with
`data_bind(compact=Footer.compact)`. That binding is a watcher kept on the Footer, and Textual
forgets a removed widget's watcher only when the watched reactive next changes, which `compact`
never does. So every recompose kept the old keys alive (a widget with its styles and lines, about
25 kB each, 13 on the dashboard): 26 dead keys held at start, more after each modal (issue 25)."""

from textual.widgets import Footer as TextualFooter


def drop_closed_watchers(node: object) -> int:
    """Forget the watchers that widgets since removed left on `node`'s reactives, as Textual does
    itself when the reactive changes (it keeps those whose widget is not `_closing`).
    Returns how many were dropped."""
    watchers = getattr(node, "__watchers", None) or {}  # Textual's name, set with setattr
    dropped = 0
    for entries in watchers.values():
        # getattr: a Textual without `_closing` keeps every watcher, as before, instead of failing
        kept = [(reactable, callback) for reactable, callback in entries
                if not getattr(reactable, "_closing", False)]
        dropped += len(entries) - len(kept)
        entries[:] = kept
    return dropped


class Footer(TextualFooter):
    async def recompose(self) -> None:
        await super().recompose()  # the old keys are removed (closed) once this returns
        drop_closed_watchers(self)
