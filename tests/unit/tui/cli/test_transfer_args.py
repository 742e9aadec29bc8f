"""The transfer progress line: a file that grew while it was sent (done > total) shows no
negative ETA."""

import io

from tui.cli.transfer_args import Progress


def test_a_file_that_grew_while_sent_shows_eta_zero_not_negative():
    out = io.StringIO()
    bar = Progress(100 << 20, out=out)
    bar.add("data/grow.log", (100 << 20) + 4096)
    line = out.getvalue()
    assert "ETA 0:00" in line, line
    assert "-" not in line.split("ETA")[1].split()[0], line


def test_eta_counts_down_while_sending():
    out = io.StringIO()
    bar = Progress(1000, out=out)
    bar.t0 -= 60  # a minute of connecting and listing: not the transfer's rate
    bar.add("a", 1)
    assert "ETA --:--" in out.getvalue()  # no guess from the first bytes (it read 86077:57)
    bar.started -= 10  # 10 s since the first byte
    bar.shown = 0
    bar.add("a", 99)  # 10 B/s, 900 B left: 90 s
    assert "ETA 1:30" in out.getvalue().split("\r")[-1], out.getvalue()
