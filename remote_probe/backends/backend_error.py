"""The one exception every GPU backend raises (its own module: the backends import it
without importing the package that selects them, so there is no import circle)."""


class BackendError(Exception):
    """GPU data could not be read; str(exc) is a one-line reason for the user."""
