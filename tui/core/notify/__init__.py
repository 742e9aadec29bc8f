"""Notifications on the laptop side: settings from the config (settings), the request that
configures the box's daemon (wire), the templates in the user's language (messages) and the
laptop's own sends through Apprise (send)."""
