"""Duration parsing, formatting and the arithmetic part of the Expr language.

A leaf module: nothing here imports the rest of deadline_audit.

Text forms
----------
- `parse_go_duration` / `parse_go_duration_ns`: Go's `time.ParseDuration`, exactly
  (including its int64 overflow limits and its float truncation of fractions).
- `parse_duration_text`: what env/config strings hold: Go durations, plain numbers in a
  default unit, "30 sec" / "2min" / "1 hour" style, and ISO-8601 "PT30M".
- `format_go_duration`: Go's `Duration.String()`.

Quantities and unit algebra (`evaluate`)
----------------------------------------
A value is a `Quantity(value, unit)` with unit `None` (unitless number), `"ns"` (a Go
`time.Duration`, counted in nanoseconds: `time.Second` is 1e9 ns) or `"s"` (a Python
`timedelta`, counted in seconds), or a `str`, or `None` (unknown / Python None / Go nil).

    mul   None*None -> None;  None*u -> u;  ns*ns -> ns (Go: both are int64 Durations, so
          `time.Duration(n) * time.Second` is n seconds);  s*s, ns*s -> unknown
    div   u/None -> u;  u/u -> None (a ratio);  None/u, ns/s, x/0 -> unknown
          (true division: Go's integer truncation is below a nanosecond)
    add, sub, min, max
          operands must agree; a unitless operand takes the other's unit (Go untyped
          constants: `d + 5` is 5 ns); ns with s -> unknown; str + str concatenates (add)
    neg   keeps the unit
    conv  parse_duration: str -> ns (Go grammar);  number: str -> unitless (int()/float()/
          strconv), a Quantity -> its bare value;  go_duration: None -> ns (same value);
          seconds_of / ms_of: ns -> unitless seconds / whole ms (a unitless receiver is a
          Duration by type: read as ns);  timedelta_seconds: s -> unitless;
          json_decode_ns: a unitless number n -> n ns (encoding/json puts a JSON number
          into a Duration as nanoseconds: 3600 becomes 3.6 µs)
    or    the first argument that is not None, "" or zero; else the last one's value

Any other kind (ref, field, item, env, cfg, call, …) is handed to the caller's `resolve`,
which returns a Quantity, a str, a plain number or None. Anything odd yields None; this
module never raises on malformed expressions.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

NS_PER_S = 1_000_000_000
_INT64_MAX = (1 << 63) - 1

_GO_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": NS_PER_S,
    "m": 60 * NS_PER_S,
    "h": 3600 * NS_PER_S,
}


# --- Go time.ParseDuration -------------------------------------------------------------


def parse_go_duration_ns(text: str) -> int | None:
    """Go `time.ParseDuration` in integer nanoseconds; None when Go would return an error."""
    if not isinstance(text, str):
        return None
    s = text
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        return None
    total = 0
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            return None
        # leading integer
        i, v = 0, 0
        while i < len(s) and "0" <= s[i] <= "9":
            if v > (1 << 63) // 10:
                return None
            v = v * 10 + ord(s[i]) - 48
            if v > 1 << 63:
                return None
            i += 1
        pre = i > 0
        s = s[i:]
        # optional fraction; digits past int64 precision are consumed but ignored
        f, scale, post = 0, 1.0, False
        if s and s[0] == ".":
            s = s[1:]
            i, overflow = 0, False
            while i < len(s) and "0" <= s[i] <= "9":
                if not overflow:
                    y = f * 10 + ord(s[i]) - 48
                    if f > _INT64_MAX // 10 or y > 1 << 63:
                        overflow = True
                    else:
                        f, scale = y, scale * 10
                i += 1
            post = i > 0
            s = s[i:]
        if not pre and not post:
            return None
        # unit: everything up to the next digit or '.'
        i = 0
        while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
            i += 1
        if i == 0:
            return None
        unit = _GO_UNITS.get(s[:i])
        s = s[i:]
        if unit is None or v > (1 << 63) // unit:
            return None
        v *= unit
        if f > 0:
            v += int(float(f) * (float(unit) / scale))  # Go truncates the same way
            if v > 1 << 63:
                return None
        total += v
        if total > 1 << 63:
            return None
    if neg:
        return -total
    if total > _INT64_MAX:
        return None
    return total


def parse_go_duration(text: str) -> float | None:
    """Go `time.ParseDuration`, in seconds; None when invalid."""
    ns = parse_go_duration_ns(text)
    return None if ns is None else ns / NS_PER_S


# --- Go Duration.String() --------------------------------------------------------------


def _frac(u: int, prec: int) -> tuple[str, int]:
    """Go fmtFrac: the fraction of u/10**prec without trailing zeros, and u // 10**prec."""
    digits = ""
    printed = False
    for _ in range(prec):
        digit = u % 10
        printed = printed or digit != 0
        if printed:
            digits = str(digit) + digits
        u //= 10
    return ("." + digits if printed else ""), u


def format_go_duration_ns(ns: int) -> str:
    """Go `Duration.String()` of an integer nanosecond count."""
    ns = int(ns)
    neg = ns < 0
    u = -ns if neg else ns
    if u < NS_PER_S:
        if u == 0:
            return "0s"
        if u < 1_000:
            out = f"{u}ns"
        else:
            prec, unit = (3, "\u00b5s") if u < 1_000_000 else (6, "ms")
            frac, whole = _frac(u, prec)
            out = f"{whole}{frac}{unit}"
    else:
        frac, secs = _frac(u, 9)
        out = f"{secs % 60}{frac}s"
        mins = secs // 60
        if mins:
            out = f"{mins % 60}m{out}"
            hours = mins // 60
            if hours:
                out = f"{hours}h{out}"
    return "-" + out if neg else out


def format_go_duration(seconds: float) -> str:
    """Go `Duration.String()` of a value in seconds ("1h30m0s", "1.5s", "500ms", "0s")."""
    return format_go_duration_ns(round(seconds * NS_PER_S))


# --- env/config duration strings -------------------------------------------------------

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_DEFAULT_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "m": 60.0, "h": 3600.0}

# Unit words for the humane form. Words of 3+ letters match in any case; short ones only
# in lowercase ("30M" could be months).
_HUMANE_UNITS = {
    "ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3,
    "msec": 1e-3, "msecs": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
}
_HUMANE_PART = re.compile(r"\s*((?:\d+(?:\.\d*)?|\.\d+))\s*([A-Za-z\u00b5\u03bc]+)\s*,?")
_ISO = re.compile(
    r"P(?:(\d+(?:[.,]\d+)?)W)?(?:(\d+(?:[.,]\d+)?)D)?"
    r"(?:T(?:(\d+(?:[.,]\d+)?)H)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)S)?)?",
    re.IGNORECASE,
)


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        text = text[1:-1].strip()
    return text


def _humane(text: str) -> float | None:
    sign = 1.0
    if text[:1] in "+-":
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:]
    pos, total, parts = 0, 0.0, 0
    while pos < len(text):
        m = _HUMANE_PART.match(text, pos)
        if not m:
            return None
        word = m.group(2)
        factor = _HUMANE_UNITS.get(word) if len(word) < 3 else _HUMANE_UNITS.get(word.lower())
        if factor is None:
            return None
        total += float(m.group(1)) * factor
        pos, parts = m.end(), parts + 1
    return sign * total if parts else None


def _iso8601(text: str) -> float | None:
    m = _ISO.fullmatch(text)
    if not m or not any(m.groups()) or text.upper().endswith("T"):
        return None
    factors = (604800.0, 86400.0, 3600.0, 60.0, 1.0)
    return sum(float(g.replace(",", ".")) * f for g, f in zip(m.groups(), factors) if g)


def parse_duration_text(text: str, *, default_unit: str | None = "s") -> float | None:
    """Seconds from an env/config string, or None.

    Accepts Go durations ("1h30m", "500ms"), plain numbers read in `default_unit`
    ("s", "ms", "us", "ns", "m", "h"; None: a unitless non-zero number is unknown),
    "30 sec" / "2min" / "1 hour 30 minutes" and ISO-8601 ("PT30M", "P1DT2H").
    """
    if not isinstance(text, str):
        return None
    text = _unquote(text)
    if not text:
        return None
    go = parse_go_duration(text)
    if go is not None:
        return go
    if _NUMBER.fullmatch(text):
        value = float(text)
        if not math.isfinite(value):
            return None
        if value == 0:
            return 0.0
        factor = _DEFAULT_UNITS.get(default_unit) if default_unit else None
        return None if factor is None else value * factor
    if text[:1] in ("P", "p"):
        iso = _iso8601(text)
        if iso is not None:
            return iso
    value = _humane(text)
    if value is None or not math.isfinite(value):
        return None
    return value


# --- quantities and Expr evaluation ----------------------------------------------------

_UNITS = (None, "ns", "s")
_PER_SECOND = {"ns": 1e9, "s": 1.0, "ms": 1e3, "us": 1e6}


@dataclass(frozen=True)
class Quantity:
    value: float
    unit: str | None = None  # None | "ns" | "s"

    def to_seconds(self, default_unit: str | None = "s") -> float | None:
        """Seconds; a unitless value is read in `default_unit` (None: unknown)."""
        unit = self.unit or default_unit
        per = _PER_SECOND.get(unit) if unit else None
        return None if per is None else self.value / per


Value = Quantity | str | None
Resolve = Callable[[dict], Any]

_MAX_DEPTH = 200


def _as_value(v: Any) -> Value:
    if isinstance(v, Quantity):
        return v if v.unit in _UNITS and _finite(v.value) else None
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return Quantity(float(v)) if _finite(v) else None
    if isinstance(v, str):
        return v
    return None


def _finite(v: Any) -> bool:
    try:
        return math.isfinite(v)
    except TypeError:
        return False


def _truthy(v: Value) -> bool:
    if v is None:
        return False
    if isinstance(v, str):
        return v != ""
    return v.value != 0


def _same_unit(a: Quantity, b: Quantity) -> str | None | bool:
    """The common unit of an additive pair, or False when they do not mix."""
    if a.unit is None or b.unit is None or a.unit == b.unit:
        return a.unit or b.unit
    return False


def _binary(op: str, a: Value, b: Value) -> Value:
    if op == "add" and isinstance(a, str) and isinstance(b, str):
        return a + b
    # a bare number read as text (an env value of a typed settings field, whose conversion
    # the library does) takes part in arithmetic as the number it is
    a, b = _number_text(a), _number_text(b)
    if not isinstance(a, Quantity) or not isinstance(b, Quantity):
        return None
    if op == "mul":
        if a.unit and b.unit and not (a.unit == b.unit == "ns"):
            return None
        return Quantity(a.value * b.value, a.unit or b.unit)
    if op == "div":
        if b.value == 0:
            return None
        if b.unit is None:
            return Quantity(a.value / b.value, a.unit)
        if a.unit == b.unit:
            return Quantity(a.value / b.value, None)
        return None
    unit = _same_unit(a, b)
    if unit is False:
        return None
    if op == "add":
        return Quantity(a.value + b.value, unit)
    if op == "sub":
        return Quantity(a.value - b.value, unit)
    if op == "min":
        return Quantity(min(a.value, b.value), unit)
    if op == "max":
        return Quantity(max(a.value, b.value), unit)
    return None


def _number_of(text: str) -> float | None:
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _conv(t: str, x: Value) -> Value:
    if t == "parse_duration":
        ns = parse_go_duration_ns(x) if isinstance(x, str) else None
        return None if ns is None else Quantity(float(ns), "ns")
    if t == "number":
        if isinstance(x, str):
            n = _number_of(x)
            return None if n is None else Quantity(n)
        return Quantity(x.value) if isinstance(x, Quantity) else None
    if not isinstance(x, Quantity):
        return None
    if t in ("go_duration", "json_decode_ns"):
        return Quantity(x.value, "ns") if x.unit in (None, "ns") else None
    if t == "seconds_of":
        return Quantity(x.value / 1e9) if x.unit in (None, "ns") else None
    if t == "ms_of":
        return Quantity(float(math.trunc(x.value / 1e6))) if x.unit in (None, "ns") else None
    if t == "timedelta_seconds":
        return Quantity(x.value) if x.unit in (None, "s") else None
    return None


def _number_text(v: Value) -> Value:
    if isinstance(v, str):
        try:
            number = float(v.strip())
        except ValueError:
            return v
        return Quantity(number) if _finite(number) else v
    return v


def _eval(expr: Any, resolve: Resolve, depth: int) -> Value:
    if not isinstance(expr, dict) or depth > _MAX_DEPTH:
        return None
    k = expr.get("k")
    if k == "num":
        v, u = expr.get("v"), expr.get("u")
        if u not in _UNITS or isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        return Quantity(float(v), u) if _finite(v) else None
    if k == "str":
        v = expr.get("v")
        return v if isinstance(v, str) else None
    if k == "none":
        return None
    if k == "op":
        op, args = expr.get("op"), expr.get("args")
        if not isinstance(args, list) or not args:
            return None
        vals = [_eval(a, resolve, depth + 1) for a in args]
        if op == "neg":
            v = vals[0]
            return Quantity(-v.value, v.unit) if len(vals) == 1 and isinstance(v, Quantity) else None
        if op not in ("mul", "add", "sub", "div", "min", "max") or len(vals) < 2 and op in ("sub", "div"):
            return None
        acc = vals[0]
        if len(vals) == 1:  # min(x) / a lone sum: only numbers pass through
            return acc if isinstance(acc, Quantity) else None
        for v in vals[1:]:
            acc = _binary(op, acc, v)
            if acc is None:
                return None
        return acc
    if k == "conv":
        return _conv(expr.get("t"), _eval(expr.get("x"), resolve, depth + 1))
    if k == "choice":  # `a if test else b`: known only when both give the same
        vals = [_eval(a, resolve, depth + 1) for a in expr.get("args") or ()]
        return vals[0] if vals and all(v is not None and v == vals[0] for v in vals) else None
    if k == "or":
        args = expr.get("args")
        if not isinstance(args, list) or not args:
            return None
        v: Value = None
        for a in args:
            v = _eval(a, resolve, depth + 1)
            if _truthy(v):
                return v
        return v
    return _as_value(resolve(expr))


def evaluate(expr: dict, resolve: Resolve) -> Value:
    """The value of `expr` (see the module doc for the unit algebra); None when unknown."""
    try:
        return _eval(expr, resolve, 0)
    except (ArithmeticError, TypeError, ValueError, KeyError, AttributeError, RecursionError):
        return None
