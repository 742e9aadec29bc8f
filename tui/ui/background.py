"""One way to run an action in the background and one place its failure goes.

Actions raise; the decorator hands any failure to `CockpitApp.report_failure`, which shows one
notice (plain text, never markup) and writes a log line. So no action holds its own
`try: ... except Exception`. (Textual's Worker.StateChanged does not bubble from screens to the
app, so a handler on the app alone would miss every screen's workers.)"""

import asyncio
import functools

from textual import work

from tui.core.i18n import _


def background(name, group=None):
    """A Textual worker named for the notice a failure produces ("<name> failed: …")."""
    def decorate(method):
        @functools.wraps(method)
        async def run(node, *args, **kwargs):
            try:
                return await method(node, *args, **kwargs)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the one place failures are caught
                node.app.report_failure(name, exc)
        return work(exclusive=True, group=group or name, exit_on_error=False, name=name)(run)
    return decorate


def failure_text(name, exc):
    """What the user reads when background work fails: the action, then the reason."""
    if isinstance(exc, asyncio.TimeoutError):
        reason = _("the box did not answer in time")
    else:
        reason = str(exc) or exc.__class__.__name__
    return _("%s failed: %s") % (_(name) if name else _("action"), reason)
