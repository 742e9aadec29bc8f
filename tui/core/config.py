"""Per-host settings in TOML under the platform config dir (platformdirs).

gputui works with no config at all. A broken file is reported with its path and the
parser's reason, then ignored (defaults apply) and never overwritten; values of the wrong
type are reported one by one and replaced by defaults.

    [defaults]
    currency = "CNY"
    language = "zh"            # or "en"; default from LC_ALL/LC_MESSAGES/LANG
    [hosts.mybox]
    rate = 2.58                # per hour, for the whole box
    granularity = "hour"       # second | minute | hour (per started hour)
    budget_session = 50
    release_command = "shutdown -h now"
    [hosts.mybox.autostop]
    allowed = true             # opt-in: the probe may run release_command
    idle_minutes = 30
"""

import dataclasses
import datetime
import math
import os
from typing import Any, Dict, List, Optional, Tuple

import platformdirs

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

from tui.core.i18n import _
from tui.core.private import write_private_file

APP = "gputui"
GRANULARITIES = ("second", "minute", "hour")


def config_dir() -> str:
    """The one seam tests patch (through GPUTUI_CONFIG_DIR)."""
    return os.environ.get("GPUTUI_CONFIG_DIR") or platformdirs.user_config_dir(APP)


def state_dir() -> str:
    return os.environ.get("GPUTUI_STATE_DIR") or platformdirs.user_state_dir(APP)


def data_dir() -> str:
    """Downloads and captured environments live here."""
    return os.environ.get("GPUTUI_DATA_DIR") or platformdirs.user_data_dir(APP)


def config_path() -> str:
    return os.path.join(config_dir(), "config.toml")


class ConfigError(Exception):
    pass


@dataclasses.dataclass
class AutostopConfig:
    allowed: bool = False  # opt-in per host: nothing is ever stopped unless this is true
    idle_minutes: Optional[float] = 30.0
    deadline: Optional[str] = None  # "07:00" local time on the laptop
    max_hours: Optional[float] = None
    grace_seconds: float = 120.0
    idle_threshold: Optional[float] = None
    at_budget: bool = False  # also release once the session's or day's budget is spent (issue 36)
    hung_counts_idle: bool = False  # a hung job's GPUs count as idle for autostop (issue 36)


@dataclasses.dataclass
class HostConfig:
    rate: Optional[float] = None  # money per hour for the box
    currency: str = "CNY"
    granularity: str = "second"
    idle_threshold: float = 5.0  # % GPU utilization under which a GPU is idle
    budget_session: Optional[float] = None
    budget_day: Optional[float] = None
    balance_low_hours: float = 2.0  # the box tells "balance low" when it covers less spend than this
    provider: Optional[str] = None
    release_command: Optional[str] = None
    release_action: Optional[str] = None  # which of the provider's actions releases it (stop, terminate, ...)
    expect: Optional[str] = None  # what was ordered when it is not a whole card: "mig 3g.40gb", "vgpu" (doctor)
    persistent_paths: List[str] = dataclasses.field(default_factory=list)
    ephemeral_paths: List[str] = dataclasses.field(default_factory=list)
    artifact_paths: List[str] = dataclasses.field(default_factory=list)
    storage_gb: Optional[float] = None
    storage_price_gb_month: Optional[float] = None
    start: Optional[str] = None  # override of the instance start (ISO 8601)
    gpus: Optional[int] = None  # how many GPUs were rented (checked by doctor)
    python: Optional[str] = None  # the training environment's python (default: python3)
    net_check_urls: Optional[List[str]] = None  # None: PyPI and the HF hub; []: no network checks
    min_cores_per_gpu: float = 8.0
    min_ram_gb_per_gpu: float = 64.0
    search_paths: List[str] = dataclasses.field(default_factory=list)  # checklist: where to look
    temp_dirs: List[str] = dataclasses.field(default_factory=list)  # checklist: big leftovers here
    cache_dirs: List[str] = dataclasses.field(default_factory=list)  # checklist: caches billed as storage
    allow_kill: bool = False  # the checklist may kill processes (after confirming)
    allow_delete: bool = False  # the checklist may delete temp files (after confirming)
    key_install_declined: bool = False  # said no to installing a key after a password login
    autostop: AutostopConfig = dataclasses.field(default_factory=AutostopConfig)
    language: Optional[str] = None  # "zh" or "en"; read early by tui.core.i18n (issue 14)
    # the fleet (gputui fleet / exporter): alarm threshold, and how it reaches this host
    idle_alarm_minutes: float = 30.0  # billing while every GPU idle this long: forgotten box
    remote_dir: Optional[str] = None  # where the probe lives on the box (like --remote-dir)
    simulate: Optional[str] = None  # simulator scenario instead of the GPU (demo, tests)
    pip_index_url: Optional[str] = None  # a PyPI mirror for installs on the box (nvitop)
    autodl_token: Optional[str] = None  # AutoDL developer token: the wallet balance, read from the laptop

    def start_epoch(self) -> Optional[float]:
        if not self.start:
            return None
        return datetime.datetime.fromisoformat(self.start).timestamp()


_TYPES = {
    "rate": (int, float), "currency": str, "granularity": str, "idle_threshold": (int, float),
    "budget_session": (int, float), "budget_day": (int, float), "provider": str,
    "balance_low_hours": (int, float),
    "release_command": str, "release_action": str, "expect": str, "persistent_paths": list, "ephemeral_paths": list,
    "artifact_paths": list, "storage_gb": (int, float), "storage_price_gb_month": (int, float),
    "start": str, "gpus": int, "python": str, "net_check_urls": list,
    "min_cores_per_gpu": (int, float), "min_ram_gb_per_gpu": (int, float),
    "allow_kill": bool, "allow_delete": bool, "search_paths": list, "temp_dirs": list,
    "cache_dirs": list, "key_install_declined": bool,
    "language": str,
    "idle_alarm_minutes": (int, float), "remote_dir": str, "simulate": str,
    "pip_index_url": str, "autodl_token": str,
}
_AUTOSTOP_TYPES = {
    "allowed": bool, "idle_minutes": (int, float), "deadline": str, "max_hours": (int, float),
    "grace_seconds": (int, float), "idle_threshold": (int, float), "at_budget": bool,
    "hung_counts_idle": bool,
}


# Numbers must be finite (TOML allows nan and inf) and inside these bounds (inclusive;
# None: open). A value outside is reported and the default is used.
_RANGES = {
    "rate": (0, 1e6), "idle_threshold": (0, 100), "budget_session": (0, 1e9),
    "budget_day": (0, 1e9), "balance_low_hours": (0, 1e4), "storage_gb": (0, 1e7), "storage_price_gb_month": (0, 1e6),
    "gpus": (0, 4096), "min_cores_per_gpu": (0, 4096), "min_ram_gb_per_gpu": (0, 1e6),
}
_AUTOSTOP_RANGES = {
    "idle_minutes": (0, 1e6), "max_hours": (0, 1e6), "grace_seconds": (0, 86400),
    "idle_threshold": (0, 100),
}
_LISTS_OF_TEXT = {"persistent_paths", "ephemeral_paths", "artifact_paths", "net_check_urls",
                  "search_paths", "temp_dirs", "cache_dirs"}


def range_problem(value: float, bounds: Tuple[Any, Any]) -> Optional[str]:
    """Why a number is unusable (not finite, out of bounds), or None if it is fine."""
    if isinstance(value, float) and not math.isfinite(value):
        return "%r is not a finite number" % value
    lo, hi = bounds
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        if hi is None:
            return "%r is below %g" % (value, lo)
        return "%r is not between %g and %g" % (value, lo, hi)
    return None


def _apply(target: object, table: Dict[str, Any], types: Dict[str, Any], where: str,
           problems: List[str], ranges: Optional[Dict[str, Tuple[Any, Any]]] = None) -> None:
    for key, value in table.items():
        if key not in types:
            problems.append(_("%s: unknown setting %r (ignored)") % (where, key))
            continue
        if not isinstance(value, types[key]) or (types[key] is int and isinstance(value, bool)) \
                or (isinstance(value, bool) and types[key] == (int, float)):
            problems.append(_("%s.%s: expected %s, got %r (default used)")
                            % (where, key, _type_name(types[key]), value))
            continue
        if ranges and key in ranges:
            why = range_problem(value, ranges[key])
            if why:
                problems.append(_("%s.%s: %s (default used)") % (where, key, why))
                continue
        if key in _LISTS_OF_TEXT and types is _TYPES and not all(isinstance(v, str) for v in value):
            problems.append(_("%s.%s: expected a list of text, got %r (default used)") % (where, key, value))
            continue
        setattr(target, key, value)


def _type_name(t: Any) -> str:
    if isinstance(t, tuple):
        return _("a number")
    return {str: _("text"), list: _("a list"), bool: _("true/false"), int: _("a whole number")}[t]


def _validate(cfg: HostConfig, where: str, problems: List[str]) -> None:
    if cfg.granularity not in GRANULARITIES:
        problems.append(_("%s.granularity: %r is not one of %s (using 'second')")
                        % (where, cfg.granularity, ", ".join(GRANULARITIES)))
        cfg.granularity = "second"
    if cfg.start:
        try:
            cfg.start_epoch()
        except ValueError:
            problems.append(_("%s.start: %r is not an ISO date-time (ignored)") % (where, cfg.start))
            cfg.start = None


class Config:
    """The whole file: defaults and per-host tables, plus problems found reading it."""

    def __init__(self, data: Optional[Dict[str, Any]] = None, path: Optional[str] = None,
                 problems: Optional[List[str]] = None, broken: bool = False) -> None:
        self.data = data or {}
        self.path = path
        self.problems = problems or []
        self.broken = broken  # unreadable: never write over it

    @classmethod
    def load(cls, path: Optional[str] = None) -> "Config":
        path = path or config_path()
        if not os.path.exists(path):
            return cls({}, path)
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            return cls({}, path, [_("%s is not valid TOML (%s); using defaults, the file is left "
                                    "as it is") % (path, exc)], broken=True)
        except OSError as exc:
            return cls({}, path, [_("cannot read %s: %s; using defaults") % (path, exc.strerror)],
                       broken=True)
        problems = []
        for key in ("defaults", "hosts"):
            if key in data and not isinstance(data[key], dict):
                problems.append(_("%s: [%s] must be a table (ignored)") % (path, key))
                data[key] = {}
        return cls(data, path, problems)

    def autodl_token(self, host_cfg: HostConfig) -> Tuple[Optional[str], Optional[str]]:
        """(token, problem): the host's autodl_token, else [providers.autodl] token. A token in a
        file others can read is not used (problem says why): it can spend the account."""
        table = (self.data.get("providers") or {}).get("autodl") or {}
        token = host_cfg.autodl_token or (table.get("token") if isinstance(table, dict) else None)
        if not isinstance(token, str) or not token:
            return None, None
        try:
            mode = os.stat(self.path).st_mode & 0o077 if self.path else 0
        except OSError:
            mode = 0
        if mode:
            return None, _("the AutoDL token in %s is not used: others can read the file (chmod 600 it)") % self.path
        return token, None

    def host(self, name: str) -> HostConfig:
        cfg = HostConfig()
        problems = self.problems
        for where, table in (("defaults", self.data.get("defaults", {})),
                             ("hosts.%s" % name, self.data.get("hosts", {}).get(name, {}))):
            if not isinstance(table, dict):
                if where != "defaults":
                    problems.append(_("%s: %s is %r, not a table such as [%s] (ignored)")
                                    % (self.path, where, table, where))
                continue
            table = dict(table)
            auto = table.pop("autostop", None)
            table.pop("notify", None)  # [hosts.NAME.notify]: read (and checked) by core/notify/settings.py
            _apply(cfg, table, _TYPES, where, problems, _RANGES)
            if isinstance(auto, dict):
                _apply(cfg.autostop, auto, _AUTOSTOP_TYPES, where + ".autostop", problems,
                       _AUTOSTOP_RANGES)
        _validate(cfg, "hosts.%s" % name, problems)
        # Same problem reported once even if host() is called many times.
        self.problems = list(dict.fromkeys(problems))
        return cfg

    def keymap(self) -> Dict[str, str]:
        """`[keymap]`: binding id -> keys (as posting does), e.g. `release = "ctrl+r"`."""
        table = self.data.get("keymap", {})
        if not isinstance(table, dict):
            self.problems.append(_("%s: [keymap] must be a table of binding id = \"keys\" (ignored)")
                                 % self.path)
            return {}
        keymap = {}
        for binding_id, keys in table.items():
            if isinstance(keys, str) and keys.strip():
                keymap[binding_id] = keys.strip()
            else:
                self.problems.append(_("%s: keymap.%s must be a key such as \"ctrl+r\" (ignored)")
                                     % (self.path, binding_id))
        return keymap

    def set_host_values(self, name: str, **values: Any) -> None:
        """Remember values for a host (e.g. a rate typed in the app). The file is edited
        round-trip (tomlkit): the user's comments, order and formatting stay, only these
        values change. Atomic write, 0600."""
        self.path = self.path or config_path()  # one built in memory saves to the default file
        if self.broken:
            raise ConfigError(_("%s could not be read, so gputui will not overwrite it; fix or "
                                "remove it first") % self.path)
        try:
            with open(self.path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            text = ""
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(_("cannot read %s: %s") % (self.path, getattr(exc, "strerror", None) or exc))
        import tomlkit  # only to write: reading is tomllib (issue 26: start-up of `status`)
        import tomlkit.exceptions
        try:
            doc = tomlkit.parse(text)
        except tomlkit.exceptions.TOMLKitError as exc:  # changed on disk since it was loaded
            raise ConfigError(_("%s is not valid TOML (%s); gputui will not overwrite it")
                              % (self.path, exc))
        table = host_table_for_edit(doc, name, self.path)
        current = Config(doc.unwrap(), self.path).host(name)
        for key, value in values.items():
            if value is None:
                table.pop(key, None)
            elif key in table or getattr(current, key, None) != value:
                # a value the host already gets (e.g. the currency from [defaults]) is not
                # copied into its table: the file changes only where the user changed something
                if not (key in table and table[key] == value):
                    table[key] = value
        try:
            write_private_file(self.path, tomlkit.dumps(doc))
        except OSError as exc:
            raise ConfigError(_("cannot save %s: %s") % (self.path, exc.strerror or exc))
        self.data = doc.unwrap()


def host_table_for_edit(doc: Any, name: str, path: Optional[str]) -> Any:
    """The tomlkit table of [hosts.NAME] in `doc`, created when missing; ConfigError (saying
    which key and what it holds) when [hosts] or hosts.NAME is there but is not a table."""
    import tomlkit
    hosts = doc.get("hosts")
    if hosts is None:
        hosts = tomlkit.table(is_super_table=True)
        doc["hosts"] = hosts
    elif not isinstance(hosts, dict):
        raise ConfigError(_("%s: hosts is %r, not a table; make it [hosts.NAME] tables first")
                          % (path, hosts))
    table = hosts.get(name)
    if table is None:
        table = tomlkit.table()
        hosts[name] = table
    elif not isinstance(table, dict):
        raise ConfigError(_("%s: hosts.%s is %r, not a table such as [hosts.%s]; gputui will not "
                            "replace it, fix it first") % (path, name, table.unwrap()
                                                           if hasattr(table, "unwrap") else table, name))
    return table
