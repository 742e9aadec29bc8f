"""The Textual app: screens, widgets, styles. Only displays; decisions live in tui.core."""
