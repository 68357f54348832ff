import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deadline_audit.durations import (
    Quantity,
    evaluate,
    format_go_duration,
    format_go_duration_ns,
    parse_duration_text,
    parse_go_duration,
    parse_go_duration_ns,
)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def num(v, u=None):
    return {"k": "num", "v": v, "u": u}


def op(name, *args):
    return {"k": "op", "op": name, "args": list(args)}


def conv(t, x):
    return {"k": "conv", "t": t, "x": x}


SECOND = num(1e9, "ns")
MINUTE = num(6e10, "ns")
HOUR = num(3.6e12, "ns")


def no_resolve(expr):
    raise AssertionError(f"unexpected resolve({expr})")


def seconds(expr, resolve=no_resolve, default_unit="s"):
    value = evaluate(expr, resolve)
    assert isinstance(value, Quantity), value
    return value.to_seconds(default_unit)


# --- Go grammar -------------------------------------------------------------------------


@given(INT64)
def test_format_then_parse_round_trips_exactly(ns):
    assert parse_go_duration_ns(format_go_duration_ns(ns)) == ns


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_round_trip_in_seconds(ns):
    secs = ns / 1e9
    assert parse_go_duration(format_go_duration(secs)) == pytest.approx(secs, abs=1e-9)


@given(st.text(alphabet="0123456789.hmsnuµ+-x ", max_size=12))
def test_parse_never_raises(text):
    result = parse_go_duration(text)
    assert result is None or isinstance(result, float)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        (".5s", 0.5),
        ("1.s", 1.0),
        ("-1m", -60.0),
        ("+5s", 5.0),
        ("0", 0.0),
        ("-0", 0.0),
        ("0s", 0.0),
        ("300ms", 0.3),
        ("1µs", 1e-6),  # micro sign
        ("1μs", 1e-6),  # Greek mu
        ("2us", 2e-6),
        ("1h0m0.5s", 3600.5),
        ("30m", 1800.0),
    ],
)
def test_go_valid(text, expected):
    assert parse_go_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text", ["", "1", "1x", "1h-30m", "00", ".s", "-", "+", "s", "1 h", " 1h", "1H", "1d", "9223372036854775808ns"]
)
def test_go_invalid(text):
    assert parse_go_duration(text) is None


def test_go_int64_limits():
    assert parse_go_duration_ns("9223372036854775807ns") == 2**63 - 1
    assert parse_go_duration_ns("-9223372036854775808ns") == -(2**63)
    assert parse_go_duration_ns("1.000000001s") == 1_000_000_001


@pytest.mark.parametrize(
    "seconds_, text",
    [(0, "0s"), (5400, "1h30m0s"), (1.5, "1.5s"), (0.5, "500ms"), (1.5e-6, "1.5µs"), (1e-9, "1ns"), (-3, "-3s"), (300, "5m0s")],
)
def test_format(seconds_, text):
    assert format_go_duration(seconds_) == text


# --- env/config text ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("30m", 1800.0),
        ("1h30m", 5400.0),
        ("500ms", 0.5),
        ("1.5h", 5400.0),
        ("1800", 1800.0),
        ("1.5", 1.5),
        ("  '30m'  ", 1800.0),
        ('"120"', 120.0),
        ("30s", 30.0),
        ("30 sec", 30.0),
        ("30 seconds", 30.0),
        ("2min", 120.0),
        ("2 Minutes", 120.0),
        ("1 hour", 3600.0),
        ("1 hour 30 minutes", 5400.0),
        ("2 days", 172800.0),
        ("1d", 86400.0),
        ("500 ms", 0.5),
        ("PT30M", 1800.0),
        ("pt1h30m", 5400.0),
        ("P1DT2H", 93600.0),
        ("PT0.5S", 0.5),
        ("0", 0.0),
    ],
)
def test_parse_duration_text(text, expected):
    assert parse_duration_text(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["", "abc", "30M", "30x", "PT", "P", "P1M", "inf", "nan", "1e999", "30 m s", "--5s"])
def test_parse_duration_text_rejects(text):
    assert parse_duration_text(text) is None


def test_parse_duration_text_default_units():
    assert parse_duration_text("1500", default_unit="ms") == pytest.approx(1.5)
    assert parse_duration_text("3600", default_unit="ns") == pytest.approx(3.6e-6)
    assert parse_duration_text("30", default_unit=None) is None
    assert parse_duration_text("0", default_unit=None) == 0.0
    assert parse_duration_text("30m", default_unit=None) == 1800.0


@given(st.integers(min_value=0, max_value=10**6))
def test_plain_integers_are_seconds(n):
    assert parse_duration_text(str(n)) == float(n)


# --- evaluate -----------------------------------------------------------------------------


def test_untyped_constant_times_minute():
    assert seconds(op("mul", num(5), MINUTE)) == pytest.approx(300.0)


def test_duration_conversion_times_second():
    n = {"k": "ref", "sym": "sym:go:x.n"}
    expr = op("mul", conv("go_duration", n), SECOND)
    assert seconds(expr, lambda e: Quantity(45.0)) == pytest.approx(45.0)


def test_hours_plus_minutes():
    expr = op("add", op("mul", num(2), HOUR), op("mul", num(30), MINUTE))
    assert seconds(expr) == pytest.approx(9000.0)


def test_json_decode_ns_makes_3600_microseconds():
    assert seconds(conv("json_decode_ns", num(3600))) == pytest.approx(3.6e-6)


def test_parse_duration_of_env():
    env = {"k": "env", "name": {"k": "str", "v": "MODEL_TIMEOUT"}, "default": None}
    assert seconds(conv("parse_duration", env), lambda e: "30m") == pytest.approx(1800.0)
    assert evaluate(conv("parse_duration", env), lambda e: "1800") is None


def test_number_then_seconds_unit_decided_by_consumer():
    expr = conv("number", {"k": "str", "v": "1800"})
    value = evaluate(expr, no_resolve)
    assert value == Quantity(1800.0, None)
    assert value.to_seconds("s") == 1800.0
    assert value.to_seconds("ms") == 1.8
    assert value.to_seconds(None) is None


def test_seconds_of_and_ms_of():
    assert evaluate(conv("seconds_of", op("mul", num(90), SECOND)), no_resolve) == Quantity(90.0)
    assert evaluate(conv("ms_of", num(1.5e9, "ns")), no_resolve) == Quantity(1500.0)
    assert evaluate(conv("ms_of", num(1_500_999, "ns")), no_resolve) == Quantity(1.0)


def test_timedelta_arithmetic():
    td = num(300, "s")
    assert seconds(op("mul", td, num(2))) == 600.0
    assert evaluate(op("mul", td, td), no_resolve) is None
    assert evaluate(conv("timedelta_seconds", td), no_resolve) == Quantity(300.0)
    assert evaluate(op("add", td, num(1e9, "ns")), no_resolve) is None


def test_division():
    assert evaluate(op("div", HOUR, num(2)), no_resolve) == Quantity(1.8e12, "ns")
    assert evaluate(op("div", HOUR, MINUTE), no_resolve) == Quantity(60.0)
    assert evaluate(op("div", HOUR, num(0)), no_resolve) is None
    assert evaluate(op("div", num(1), SECOND), no_resolve) is None


def test_min_max_clamp():
    clamp = op("min", op("mul", num(90), MINUTE), HOUR)
    assert seconds(clamp) == 3600.0
    assert seconds(op("max", num(0), op("mul", num(2), MINUTE))) == 120.0
    assert evaluate(op("min", num(5, "s"), SECOND), no_resolve) is None


def test_neg_and_sub():
    assert seconds(op("neg", op("mul", num(5), SECOND))) == -5.0
    assert seconds(op("sub", HOUR, op("mul", num(30), MINUTE))) == 1800.0


def test_or_takes_first_truthy():
    env = {"k": "env", "name": {"k": "str", "v": "X"}, "default": None}
    expr = {"k": "or", "args": [env, {"k": "str", "v": "30"}]}
    assert evaluate(expr, lambda e: None) == "30"
    assert evaluate(expr, lambda e: "") == "30"
    assert evaluate(expr, lambda e: "45") == "45"
    zero_or = {"k": "or", "args": [num(0, "ns"), op("mul", num(2), MINUTE)]}
    assert seconds(zero_or) == 120.0
    assert evaluate({"k": "or", "args": [num(0), num(0)]}, no_resolve) == Quantity(0.0)


def test_str_concat_and_resolve_plain_numbers():
    assert evaluate(op("add", {"k": "str", "v": "APP_"}, {"k": "str", "v": "TIMEOUT"}), no_resolve) == "APP_TIMEOUT"
    assert evaluate(op("mul", {"k": "ref", "sym": "s"}, SECOND), lambda e: 7) == Quantity(7e9, "ns")


@pytest.mark.parametrize(
    "expr",
    [
        {},
        {"k": "num"},
        {"k": "num", "v": "5"},
        {"k": "num", "v": 5, "u": "parsecs"},
        {"k": "num", "v": math.inf},
        {"k": "op", "op": "pow", "args": [num(1), num(2)]},
        {"k": "op", "op": "mul"},
        {"k": "op", "op": "mul", "args": "x"},
        {"k": "conv", "t": "bogus", "x": num(1)},
        {"k": "conv", "t": "parse_duration", "x": num(1)},
        {"k": "or", "args": None},
        {"k": "none"},
        {"k": "unknown", "text": "f()"},
        None,
        [],
    ],
)
def test_odd_input_is_none(expr):
    assert evaluate(expr, lambda e: None) is None


def test_resolver_errors_and_deep_nesting_do_not_raise():
    def boom(expr):
        raise TypeError("bad")

    assert evaluate(op("mul", {"k": "ref", "sym": "x"}, SECOND), boom) is None
    deep = num(1)
    for _ in range(5000):
        deep = op("neg", deep)
    assert evaluate(deep, no_resolve) is None


def test_a_number_read_as_text_takes_part_in_arithmetic_and_other_text_does_not():
    # an env value of an int settings field, divided by 1000 in the code
    env = {"k": "env", "name": {"k": "str", "v": "UPSTREAM_TIMEOUT_MS"}, "default": None}
    per_second = {"k": "op", "op": "div", "args": [env, num(1000)]}
    assert evaluate(per_second, lambda e: "90000") == Quantity(90.0, None)
    assert evaluate(per_second, lambda e: "90s") is None
    assert evaluate(per_second, lambda e: "nan") is None
