"""Human formatting of figures. Plain functions, unit-tested.

Every function takes what the box sent: None, NaN, infinities and values of the wrong
type print as 'n/a' instead of raising (the wire is validated too; this is the last line).
"""

import math
from typing import Any, Iterable, List, Optional


def _num(value: Any) -> Optional[float]:
    """A finite float, or None for anything else (None, NaN, inf, text, bool)."""
    kind = type(value)  # the usual two first: the dashboard formats ~600 figures a second
    if kind is float:
        return value if value - value == 0.0 else None  # inf - inf and NaN are NaN
    if kind is int:
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def finite(value: Any) -> Optional[float]:
    """A number from the box as float when it is finite, else None."""
    return _num(value)


def finite_or_zero(value: Any) -> float:
    """For sort keys: a number from the box, or 0 when it is not a finite number."""
    value = _num(value)
    return 0.0 if value is None else value


def ratio(part: Any, whole: Any) -> Optional[float]:
    """part / whole for bars, or None when either is not a finite number or whole is 0."""
    part, whole = _num(part), _num(whole)
    if part is None or not whole:
        return None
    return _num(part / whole)  # a tiny whole can overflow to inf


def mib(value: Any) -> str:
    """MiB -> '61.7 GiB' / '512 MiB'; None -> 'n/a'."""
    value = _num(value)
    if value is None:
        return "n/a"
    if value >= 1024:
        return "%.1f GiB" % (value / 1024.0)
    return "%d MiB" % value


def size(nbytes: Any) -> str:
    """Bytes -> '512 B' / '12 KiB' / '3 MiB' / '1.2 GiB': a small file is not '(0 MiB)'."""
    n = _num(nbytes)
    if n is None:
        return "n/a"
    if n < 1024:
        return "%d B" % n
    if n < 1 << 20:
        return "%d KiB" % round(n / 1024.0)
    return mib(n / 1048576.0)


def bytes_rate(bps: Any) -> str:
    bps = _num(bps)
    if bps is None:
        return "n/a"
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bps >= size:
            return "%.1f %s" % (bps / size, unit)
    return "%d B/s" % bps


def duration(seconds: Any) -> str:
    """Elapsed time as ps does it: '45s', '12:03', '3:05:10', '2d 04h'."""
    seconds = _num(seconds)
    if seconds is None or seconds < 0:
        return "n/a"
    seconds = int(seconds)
    days, rem = divmod(seconds, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    if days:
        return "%dd %02dh" % (days, hours)
    if hours:
        return "%d:%02d:%02d" % (hours, minutes, secs)
    if minutes:
        return "%d:%02d" % (minutes, secs)
    return "%ds" % secs


def age(seconds: Any) -> str:
    """A process's age for a table redrawn every second: seconds only while they matter
    ('12:03'), then minutes ('3h05m', '2d04h'), so old jobs' cells stay still."""
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        return "n/a"
    seconds = int(seconds)
    if seconds < 3600:
        return "%d:%02d" % (seconds // 60, seconds % 60)
    if seconds < 86400:
        return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)
    return "%dd%02dh" % (seconds // 86400, seconds % 86400 // 3600)


def pct(value: Any) -> str:
    value = _num(value)
    return "n/a" if value is None else "%d%%" % round(value)


def na(value: Any, fmt: str = "%s") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    try:
        return fmt % value
    except (TypeError, ValueError, OverflowError):
        return "n/a"


def bar(fraction: Any, width: int, fill: str = "█", empty: str = "░") -> str:
    """A text bar; fraction None draws an empty bar (unknown, not zero)."""
    if width <= 0:
        return ""
    fraction = _num(fraction)
    if fraction is None:
        return "·" * width
    fraction = max(0.0, min(1.0, fraction))
    full = int(round(fraction * width))
    return fill * full + empty * (width - full)


def short_gpu_name(name: Any) -> str:
    """'NVIDIA A100-SXM4-80GB' -> 'A100-SXM4-80GB'."""
    if not name or not isinstance(name, str):
        return "GPU"
    for prefix in ("NVIDIA GeForce ", "NVIDIA "):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def level_style(value: Any, warn: float, crit: float) -> str:
    """Rich style name for a value against thresholds (temperatures, usage)."""
    value = _num(value)
    if value is None:
        return "dim"
    if value >= crit:
        return "bold red"
    if value >= warn:
        return "yellow"
    return "green"


BLOCKS = " ▁▂▃▄▅▆▇█"


def graph(values: Iterable[Any], width: int, height: int = 1, lo: float = 0.0,
          hi: float = 100.0) -> List[str]:
    """A history graph as `height` lines of block characters, newest on the right.

    The scale is fixed (lo..hi) so 94% looks like 94%, not like "the max"; missing
    history on the left is blank, so a fresh connection does not draw a fake zero line.
    """
    values = list(values)[-width:] if width > 0 else []
    pad = width - len(values)
    levels = height * 8
    cols = []
    for v in values:
        v = _num(v)
        v = lo if v is None else v
        frac = 0.0 if hi <= lo else (min(hi, max(lo, v)) - lo) / (hi - lo)
        cols.append(int(round(frac * levels)))
    lines = []
    for row in range(height - 1, -1, -1):  # top row first
        chars = []
        for level in cols:
            fill = level - row * 8
            chars.append(BLOCKS[max(0, min(8, fill))])
        lines.append(" " * pad + "".join(chars))
    return lines
