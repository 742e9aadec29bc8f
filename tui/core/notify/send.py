"""Sending from the laptop (`gputui notify test` without a host, `gputui fleet --check`,
the open app) through the Apprise library: the same URLs the box's daemon sends through
(remote_probe/wire/channel_requests.py, which the Apprise oracle test holds to Apprise's requests).

One Apprise object per channel, so each channel's outcome is known; the reason for a
failure is Apprise's own warning, with the channel's secrets scrubbed out.
"""

import dataclasses
import logging
from typing import Any, Iterable, List

from remote_probe.wire import channel_requests, channel_urls

APP_ID = channel_urls.APP_ID


@dataclasses.dataclass
class ChannelResult:
    shown: str   # the channel URL, redacted
    ok: bool
    reason: str  # safe to show: no secret in it


def apprise_asset() -> Any:
    """gputui's name on the messages and no icons: the asset the oracle test uses too."""
    import apprise
    return apprise.AppriseAsset(app_id=APP_ID, app_desc=APP_ID, image_url_mask="",
                                image_path_mask="", image_url_logo="")


def send_all(urls: Iterable[str], title: str, body: str, kind: str = "info") -> List[ChannelResult]:
    """Send (title, body) through every URL; one result per URL, in order."""
    import apprise
    notify_type = {"success": apprise.NotifyType.SUCCESS, "warning": apprise.NotifyType.WARNING,
                   "failure": apprise.NotifyType.FAILURE}.get(kind, apprise.NotifyType.INFO)
    results = []
    for url in urls:
        shown = channel_urls.redact_url(url)
        secrets = channel_urls.secrets_of(url)
        problem = channel_requests.validate_url(url)
        if problem:
            results.append(ChannelResult(shown, False, problem))
            continue
        a = apprise.Apprise(asset=apprise_asset())
        if not a.add(url):
            results.append(ChannelResult(shown, False, "Apprise does not accept this URL"))
            continue
        with apprise.LogCapture(level=logging.WARNING, fmt="%(message)s") as log:
            ok = bool(a.notify(body=body, title=title, notify_type=notify_type,
                               body_format=apprise.NotifyFormat.TEXT))
            text = log.getvalue().strip()
        reason = "sent" if ok else (text.splitlines()[-1] if text else "failed")
        results.append(ChannelResult(shown, ok, channel_urls.scrub(reason, secrets)[:200]))
    return results
