"""How far a job is, read from what it prints: tqdm bars (and the Hugging Face Trainer
and Lightning bars built on them, plus the Trainer's ``{'loss': ..., 'epoch': ...}``
lines), and plain ``step N/M`` / ``epoch N/M`` / ``iter N of M`` lines.

Input is pane text as ``tmux capture-pane`` gives it or raw output with ``\\r``
overwrites and ANSI colour; ``parse_progress(text)`` returns a ``Progress`` for the most
recent figure, or None. Lines that carry no rate or ETA of their own (plain step lines)
get them from successive observations: ``ProgressHistory``.
``cost_to_finish`` turns an ETA into money at the box's rate and billing granularity.

Pure functions, stdlib only (the probe runs on Python 3.8).
"""

import math
import re

GRANULARITY_SECONDS = {"second": 1, "minute": 60, "hour": 3600}

_ANSI = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_SCALE = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_NUM = r"(\d+(?:\.\d+)?)([kKMGTP]?)"
_COUNT = r"\d+(?:\.\d+)?[kKMGTP]?"
# tqdm's meter: "desc: 42%|███▏  | 420/1000 [01:23<01:55, 5.02it/s, loss=0.3]". The bar
# may be any characters (ascii "###   ", unicode blocks); counts may be unit-scaled.
# In a pane narrower than the bar, each redraw wraps and `capture-pane -J` joins the
# remnants into one line: no part may run across "|", "[" or "]", and the last complete
# meter on the line is the newest.
_TQDM = re.compile(
    r"(?:(?P<desc>[^|\[\]]*?):?\s*)?(?P<pct>\d{1,3})%\|(?P<bar>[^|]*)\|\s*"
    r"(?P<n>" + _COUNT + r")\s*/\s*(?P<total>" + _COUNT + r")\s*"
    r"\[(?P<elapsed>[\d:]+|\?)(?:<(?P<remaining>[\d:]+|\?))?(?:,\s*(?P<rate>[^,\]\[|]*))?"
    r"(?P<post>[^\]\[|]*)\]")
# Unknown total: "desc: 420it [01:23, 5.02it/s]"
_TQDM_NOTOTAL = re.compile(
    r"(?:(?P<desc>.*?):\s*)?(?P<n>" + _COUNT + r")(?P<unit>[A-Za-z]*)\s+"
    r"\[(?P<elapsed>[\d:]+)(?:,\s*(?P<rate>[^,\]]*))?(?P<post>[^\]]*)\]\s*$")
_RATE = re.compile(r"^\s*(\?|" + _NUM + r")\s*([A-Za-z]*)/([A-Za-z]+)\s*$")
_PLAIN = re.compile(
    r"\b(?P<kind>step|epoch|iter(?:ation)?|batch|it)s?\b\s*[:=#\[(]?\s*"
    r"(?P<n>\d+)\s*(?:/|\bof\b|out of)\s*(?P<total>\d+)", re.I)
_EPOCH_DESC = re.compile(r"\bepoch\s+(?P<n>\d+)(?:\s*/\s*(?P<total>\d+))?", re.I)
_HF_DICT = re.compile(r"^\s*\{.*'epoch':\s*(?P<epoch>[\d.]+).*\}\s*$")
_HF_LOSS = re.compile(r"'(?:loss|train_loss)':\s*(?P<loss>[-\d.eE+]+|nan|inf)")


class Progress:
    """One reading of a job's progress. ``fraction`` in [0, 1] or None (unknown total);
    ``rate`` in units per second; ``eta_seconds`` None when it cannot be told."""

    __slots__ = ("fraction", "done", "total", "rate", "unit", "eta_seconds",
                 "elapsed_seconds", "source", "label", "epoch", "epochs", "loss")

    def __init__(self, source, done=None, total=None, fraction=None, rate=None, unit="it",
                 eta_seconds=None, elapsed_seconds=None, label="", epoch=None, epochs=None,
                 loss=None):
        self.source = source
        self.done = done
        self.total = total
        self.fraction = fraction
        self.rate = rate
        self.unit = unit
        self.eta_seconds = eta_seconds
        self.elapsed_seconds = elapsed_seconds
        self.label = label
        self.epoch = epoch
        self.epochs = epochs
        self.loss = loss

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __repr__(self):
        return "<Progress %s %s/%s frac=%s rate=%s eta=%s>" % (
            self.source, self.done, self.total, self.fraction, self.rate, self.eta_seconds)


def screen_lines(text):
    """The lines a terminal would show: ANSI sequences removed, each line what is left
    after its carriage-return overwrites (the last non-empty segment)."""
    lines = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        segments = [s for s in _ANSI.sub("", raw).split("\r") if s.strip()]
        if segments:
            lines.append(segments[-1].rstrip())
    return lines


def parse_interval(text):
    """tqdm's [H:]MM:SS (or D:HH:MM:SS) in seconds; None for '?' or garbage."""
    if not text or text == "?":
        return None
    try:
        parts = [int(p) for p in text.split(":")]
    except ValueError:
        return None
    seconds = 0
    for p in parts:
        seconds = seconds * 60 + p
    if len(parts) == 4:  # days:hours:minutes:seconds
        seconds = ((parts[0] * 24 + parts[1]) * 60 + parts[2]) * 60 + parts[3]
    return float(seconds)


def _scaled(number, suffix):
    return float(number) * _SCALE.get(suffix or "", 1.0)


def _count(text):
    m = re.match(r"^" + _NUM + r"$", text.strip())
    return _scaled(m.group(1), m.group(2)) if m else None


def parse_rate(text):
    """(units per second, unit) from '5.02it/s', '12.50s/it', '1.2kit/s', '3.4MB/s';
    (None, unit) for '?it/s'."""
    if not text:
        return None, "it"
    m = _RATE.match(text)
    if not m:
        return None, "it"
    if m.group(1) == "?":
        unit = m.group(4) if m.group(5) == "s" else m.group(5)
        return None, unit or "it"
    value = _scaled(m.group(2), m.group(3))
    left, right = m.group(4), m.group(5)
    if right == "s":  # "5.02it/s": units per second
        return value, left or "it"
    if left == "s" and value > 0:  # "12.50s/it": seconds per unit
        return 1.0 / value, right
    return None, right


def _label(desc):
    return re.split(r",\s*|\]\s*", (desc or "").strip())[-1].strip()


def _tqdm(line):
    found = list(_TQDM.finditer(line))
    m = found[-1] if found else None
    if m:
        n = _count(m.group("n"))
        total = _count(m.group("total"))
        rate, unit = parse_rate(m.group("rate"))
        frac = None
        if total:
            frac = max(0.0, min(1.0, n / total))
        else:
            frac = int(m.group("pct")) / 100.0
        return Progress("tqdm", done=n, total=total, fraction=frac, rate=rate, unit=unit,
                        eta_seconds=parse_interval(m.group("remaining")),
                        elapsed_seconds=parse_interval(m.group("elapsed")),
                        label=_label(m.group("desc")))
    m = _TQDM_NOTOTAL.search(line)
    if m and (m.group("rate") or "").strip():
        rate, unit = parse_rate(m.group("rate"))
        if rate is None and "/" not in (m.group("rate") or ""):
            return None
        return Progress("tqdm", done=_count(m.group("n")), rate=rate,
                        unit=m.group("unit") or unit,
                        elapsed_seconds=parse_interval(m.group("elapsed")),
                        label=(m.group("desc") or "").strip())
    return None


def _plain(line):
    found = list(_PLAIN.finditer(line))
    if not found:
        return None
    # "Epoch 3/10 step 120/500": the innermost (last) counter moves fastest; an epoch
    # counter before it frames it.
    inner = found[-1]
    n, total = int(inner.group("n")), int(inner.group("total"))
    if total <= 0 or n > total:
        return None
    p = Progress("plain", done=float(n), total=float(total), fraction=n / float(total),
                 unit=inner.group("kind").lower(), label=line.strip()[:80])
    outer = [f for f in found[:-1] if f.group("kind").lower() == "epoch"]
    if outer and inner.group("kind").lower() != "epoch":
        e, es = int(outer[-1].group("n")), int(outer[-1].group("total"))
        if 0 < es and e <= es:
            p.epoch, p.epochs = e, es
            p.fraction = max(0.0, min(1.0, (e - 1 + n / float(total)) / es))
    elif inner.group("kind").lower() == "epoch":
        p.epoch, p.epochs = n, total
    return p


def _with_epochs(bar, epoch, epochs, zero_based):
    """A per-epoch bar (Lightning's "Epoch 3/10: 45%|...") as a fraction of the run."""
    done_epochs = epoch if zero_based else epoch - 1
    total_epochs = epochs + 1 if zero_based else epochs
    if total_epochs <= 0 or bar.fraction is None:
        return bar
    bar.epoch, bar.epochs = epoch, epochs
    inner = bar.fraction
    bar.fraction = max(0.0, min(1.0, (done_epochs + inner) / total_epochs))
    if bar.rate and bar.total:
        left = (total_epochs - done_epochs - 1) * bar.total + (bar.total - (bar.done or 0))
        bar.eta_seconds = left / bar.rate
    return bar


def parse_progress(text):
    """The most recent progress figure in pane text, or None.

    Rules, in order of preference for the last lines shown:
    - a tqdm meter (HF Trainer's bar is one); a Lightning-style "Epoch N/M:" description
      scales it to the whole run ("Epoch 0" seen anywhere means epochs count from 0 and
      M is the last epoch's number, as Lightning prints it);
    - nested tqdm bars shown together (outer epochs bar above an inner batches bar) are
      combined into one run fraction; a bar with a smaller total under the run's bar is
      an evaluation pass and does not count;
    - else a plain "step N/M" / "epoch N/M" / "iter N of M" line;
    - a Trainer log dict ({'loss': ..., 'epoch': 1.23}) adds loss and epoch to the bar,
      and a final {'train_runtime': ...} marks the run done.
    """
    lines = screen_lines(text)
    zero_based = any(re.search(r"\bepoch\s+0\b", ln, re.I) for ln in lines)
    loss = epoch_f = None
    finished = False
    for ln in lines:
        if _HF_DICT.match(ln):
            epoch_f = float(_HF_DICT.match(ln).group("epoch"))
            lm = _HF_LOSS.search(ln)
            if lm:
                try:
                    loss = float(lm.group("loss"))
                except ValueError:
                    pass
            finished = "'train_runtime'" in ln
    best = None
    for i in range(len(lines) - 1, -1, -1):
        bar = _tqdm(lines[i])
        if bar is not None:
            best = bar
            m = _EPOCH_DESC.search(bar.label)
            if m and m.group("total"):
                best = _with_epochs(bar, int(m.group("n")), int(m.group("total")), zero_based)
            elif i > 0:
                outer = _tqdm(lines[i - 1])
                if (outer is not None and outer.total and bar.fraction is not None
                        and outer.total < (bar.total or 0) and outer.fraction < 1.0):
                    best = _nest(outer, bar)
                elif outer is not None and outer.total and bar.total and outer.total > bar.total:
                    # A short bar under the run's bar: an evaluation pass (HF Trainer's
                    # eval loop), not the run itself.
                    best = outer
            break
        plain = _plain(lines[i])
        if plain is not None:
            best = plain
            break
    if best is None:
        return None
    if loss is not None:
        best.loss = loss
    if epoch_f is not None and best.epoch is None:
        best.epoch = epoch_f
    if finished:
        best.fraction, best.eta_seconds = 1.0, 0.0
    return best


def _nest(outer, inner):
    frac = (outer.done + inner.fraction) / outer.total
    eta = None
    if inner.rate and inner.total:
        left = (outer.total - outer.done - 1) * inner.total + (inner.total - inner.done)
        eta = left / inner.rate
    elif outer.eta_seconds is not None:
        eta = outer.eta_seconds
    return Progress("tqdm", done=inner.done, total=inner.total, fraction=min(1.0, frac),
                    rate=inner.rate, unit=inner.unit, eta_seconds=eta,
                    elapsed_seconds=outer.elapsed_seconds or inner.elapsed_seconds,
                    label=inner.label or outer.label, epoch=outer.done, epochs=outer.total)


class ProgressHistory:
    """Successive readings of one job, for rate and ETA where the output has none (plain
    step lines) and to smooth tqdm's instantaneous rate. Keeps ``window`` seconds."""

    def __init__(self, window=600.0):
        self.window = window
        self.points = []  # (t, fraction)

    def add(self, t, progress):
        if progress is None or progress.fraction is None:
            return
        if self.points and progress.fraction < self.points[-1][1] - 1e-9:
            self.points = []  # the run restarted (or a new bar): old points mislead
        # Keep when each value was first seen: re-reading an unchanged line later would
        # make the job look slower than it is.
        if not self.points or progress.fraction > self.points[-1][1] + 1e-12:
            self.points.append((t, progress.fraction))
        while self.points and self.points[0][0] < t - self.window:
            self.points.pop(0)

    def eta(self, t=None):
        """Seconds to fraction 1.0 from the slope over the window; None while unknown."""
        if len(self.points) < 2:
            return None
        (t0, f0), (t1, f1) = self.points[0], self.points[-1]
        if t1 <= t0 or f1 <= f0:
            return None
        per_second = (f1 - f0) / (t1 - t0)
        now = t1 if t is None else t
        return max(0.0, (1.0 - f1) / per_second - (now - t1))


def with_history(progress, history, t):
    """Fill a reading's missing ETA from the job's history (after adding it)."""
    history.add(t, progress)
    if progress is not None and progress.eta_seconds is None and progress.fraction is not None:
        progress.eta_seconds = history.eta(t)
    return progress


def cost_to_finish(eta_seconds, rate_per_hour, granularity="second", elapsed_seconds=0.0):
    """Money from now until the job ends at the box's rate. With minute or hour
    billing the provider charges every started unit, so the answer depends on how far
    into the current unit the session is (``elapsed_seconds`` since billing began).
    None when the ETA or the rate is unknown."""
    if eta_seconds is None or rate_per_hour is None or eta_seconds < 0:
        return None
    unit = GRANULARITY_SECONDS.get(granularity, 1)
    elapsed = max(0.0, elapsed_seconds or 0.0)

    def billed(seconds):
        if seconds <= 0:
            return 0.0
        return math.ceil(seconds / unit - 1e-9) * unit

    return (billed(elapsed + eta_seconds) - billed(elapsed)) / 3600.0 * rate_per_hour
