"""Text rules: box text is data (boxtext), terminal columns (cells), human figures (format)
and commands the user pastes (paste)."""
