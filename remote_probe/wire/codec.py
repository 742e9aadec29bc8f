"""One message <-> one line of bytes: strict JSON, size caps, never a crash on a bad line."""

from __future__ import annotations

import json
import math

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays off the box's import path (attach runs on every connect)
    from typing import Any, Callable, Dict, Optional, Tuple, Union

from remote_probe.wire.messages import MAX_LINE, ProtocolError
from remote_probe.wire.schema import Report, clean, validate


def _finite(value: Any) -> Any:
    """A copy of `value` with NaN/Infinity replaced by None (strict JSON has no such thing)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def encode(msg: Dict[str, Any]) -> bytes:
    """One message as a line of bytes; NaN and undecodable file names do not make it raise.

    Compact separators: every byte is on the wire. Strict JSON: a NaN from a driver
    becomes null. A file name that is not valid UTF-8 arrives here as a str with lone
    surrogates (Python's surrogateescape); then the line is written with \\udcXX escapes,
    which json.loads on the other side turns back into the same str, so the laptop can
    show it escaped and ask for exactly that path again.
    """
    try:
        text = json.dumps(msg, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN/Infinity somewhere
        msg = _finite(msg)
        text = json.dumps(msg, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: escape them, byte-exact round trip
        return (json.dumps(msg, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
                + "\n").encode("ascii")


def _parse_hooks(report: Optional[Report]
                 ) -> Tuple[Callable[[str], Optional[float]], Callable[[str], None]]:
    """json.loads hooks: NaN, Infinity and numbers too big for a float (1e999) are not
    JSON numbers we can use; they read as None ("not available"), noted in `report`."""
    def parse_float(text: str) -> Optional[float]:
        value = float(text)
        if math.isfinite(value):
            return value
        if report is not None:
            report.note("line", "%s is not a finite number" % text[:20])
        return None

    def parse_constant(name: str) -> None:
        if report is not None:
            report.note("line", "%s is not a number" % name)
        return None
    return parse_float, parse_constant


def decode(line: Union[bytes, str], report: Optional[Report] = None) -> Dict[str, Any]:
    """Parse and validate one line; raise ProtocolError with a short reason if bad.

    Never raises anything else: a line nested deeper than the parser can follow is a
    malformed line like any other, not a crash of the reader.
    """
    if isinstance(line, bytes):
        if len(line) > MAX_LINE:
            raise ProtocolError("line too long (%d bytes)" % len(line))
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("not UTF-8")
    elif len(line) > MAX_LINE:
        raise ProtocolError("line too long (%d chars)" % len(line))
    line = line.strip()
    if not line:
        raise ProtocolError("empty line")
    try:
        parse_float, parse_constant = _parse_hooks(report)
        parsed = json.loads(line, parse_float=parse_float, parse_constant=parse_constant)
    except RecursionError:
        raise ProtocolError("nested too deeply")
    except ValueError as exc:  # includes ints too long to convert
        raise ProtocolError("not JSON: %s" % str(exc)[:200])
    try:
        return validate(parsed)
    except RecursionError:
        raise ProtocolError("nested too deeply")


def decode_clean(line: Union[bytes, str], report: Optional[Report] = None) -> Dict[str, Any]:
    """decode() then clean(): what a receiver of untrusted lines calls."""
    report = report if report is not None else Report()
    msg = decode(line, report)
    try:
        return clean(msg, report)
    except RecursionError:  # cannot happen with MAX_DEPTH this small; belt and braces
        raise ProtocolError("nested too deeply")
