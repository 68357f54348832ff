import pytest

from deadline_audit.report.humanize import format_seconds


@pytest.mark.parametrize(
    "seconds, text",
    [(1800, "30 min"), (120, "120 s"), (3.6e-6, "3.6 µs"), (0.25, "250 ms"), (0, "0 s"), (3600, "1 h"),
     (5400, "90 min"), (601, "601 s"), (3 * 86400, "3 d"), (None, "unresolved"), (2e-9, "2 ns")],
)
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text
