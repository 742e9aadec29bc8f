"""Live config reload (issue 23): config edits took a restart and nothing said so (`allowed =
true` as a toast said, then `a` kept showing the same toast). The app watches the file's
mtime, reloads it, applies each host's new values in place and says what changed."""

import dataclasses
import os
from typing import Any, List, Optional, Tuple

from tui.core.config import Config, HostConfig
from tui.core.i18n import _


def _flat(cfg: Any, prefix: str = "") -> List[Tuple[str, Any]]:
    out = []
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            out += _flat(value, prefix + f.name + ".")
        else:
            out.append((prefix + f.name, value))
    return out


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return _("unset")
    return str(value)


def host_changes(old: HostConfig, new: HostConfig) -> List[str]:
    """'rate: 11.96 → 12.5', 'autostop.allowed: false → true', in the config's order."""
    before = dict(_flat(old))
    return ["%s: %s → %s" % (key, _shown(before.get(key)), _shown(value))
            for key, value in _flat(new) if before.get(key) != value]


def apply_host(target: HostConfig, new: HostConfig) -> None:
    """Copy `new` into the HostConfig the box's billing, autostop and screens already hold."""
    for f in dataclasses.fields(new):
        setattr(target, f.name, getattr(new, f.name))


class ConfigWatcher:
    """Notices when the config file changes (mtime, size or inode)."""

    def __init__(self, path: Optional[str]) -> None:
        self.path = path
        self.seen = self._stamp()

    def _stamp(self) -> Optional[Tuple[int, int, int]]:
        if not self.path:
            return None
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def poll(self) -> Optional[Config]:
        """The reloaded config when the file changed since the last look, else None."""
        if not self.path:
            return None
        stamp = self._stamp()
        if stamp == self.seen:
            return None
        self.seen = stamp
        return Config.load(self.path)


def reload_box(box: Any, fresh: HostConfig) -> List[str]:
    """Apply a host's reloaded config to a box (its `cfg`, `billing`, `state`) -> the changes."""
    from tui.core import providers
    changes = host_changes(box.cfg, fresh)
    if changes:
        apply_host(box.cfg, fresh)
        facts = (box.state.inventory or {}).get("host") or {}
        box.billing.preset = providers.resolve(facts.get("provider") or {}, box.cfg)
    return changes


def fleet_reload_lines(reloaded: Config, boxes: Any, added: List[str]) -> List[str]:
    """What a long-lived fleet (the exporter) says after a reload: its problems, each box's
    changes, the boxes that joined. Applies the changes to `boxes` as it goes."""
    lines = list(reloaded.problems)
    for box in boxes:
        if box.host in added:
            continue
        changes = reload_box(box, reloaded.host(box.host))
        if changes:
            lines.append(_("Config reloaded for %s: %s") % (box.host, "; ".join(changes)))
    if added:
        lines.append(_("Config reloaded: now also watching %s") % ", ".join(added))
    return lines
