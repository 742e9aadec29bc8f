"""The "notify_config" request the laptop sends the box's daemon after every connect: the
user's channels (tui.core.notify_settings), quiet hours, and the message templates and cause
names in the user's language (tui.core.notify_messages), so the box can say it with the
laptop closed. The params hold secrets (webhook keys): never log them, show them, or put them
in a report; `redacted()` is what may be shown."""

from typing import Any, Dict, List, Mapping, Optional, Tuple

from remote_probe.wire import channel_urls
from tui.core import notify_messages
from tui.core.notify_settings import NotifySettings, notify_settings


def config_params(settings: NotifySettings, box: str) -> Dict[str, Any]:
    """The request's parameters (the wire contract's notify_config)."""
    templates = {kind: {"title": pair[0], "body": pair[1]}
                 for kind, pair in notify_messages.templates().items()}
    return {"channels": list(settings.urls) if settings.enabled else [],
            "quiet": settings.quiet.wire() if settings.quiet else None,
            "templates": templates, "causes": notify_messages.causes(),
            "box": box, "enabled": bool(settings.enabled and settings.urls)}


def notify_config(data: Optional[Mapping[str, Any]], host: str,
                  box: Optional[str] = None) -> Tuple[Dict[str, Any], List[str]]:
    """(params, problems) for `host` from the loaded config dict; problems name no secret."""
    settings, problems = notify_settings(data, host)
    return config_params(settings, box or host), problems


def redacted(params: Mapping[str, Any]) -> List[str]:
    """The channels of a notify_config as they may be shown or logged."""
    return [channel_urls.redact_url(u) for u in params.get("channels") or ()]
