"""The screen as the terminal shows it, as plain text (the modal over its dimmed dashboard
included): what a user reads, for layout tests that look at columns."""

import io

from rich.console import Console


def screen_lines(app):
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True,
                                                        screen_stack=app._background_screens))
    return console.export_text().splitlines()
