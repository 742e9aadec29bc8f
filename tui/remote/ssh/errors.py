"""The failures a connection raises, each with a one-line explanation for the user."""


class ConnectError(Exception):
    """A connection failure with a one-line explanation for the user."""


class NotRetryable(ConnectError):
    """Waiting will not fix it (login refused, config unusable, key policy says no)."""


class AuthFailed(NotRetryable):
    """No login method the server offers worked."""
