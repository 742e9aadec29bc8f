"""The transfer progress line: a file that grew while it was sent (done > total) shows no
negative ETA."""

import io

from tui.cli.transfer_args import Progress


def test_a_file_that_grew_while_sent_shows_eta_zero_not_negative():
    out = io.StringIO()
    bar = Progress(100 << 20, out=out, draw=True)
    bar.add("data/grow.log", (100 << 20) + 4096)
    line = out.getvalue()
    assert "ETA 0:00" in line, line
    assert "-" not in line.split("ETA")[1].split()[0], line


def test_eta_counts_down_while_sending():
    out = io.StringIO()
    bar = Progress(1000, out=out, draw=True)
    bar.t0 -= 60  # a minute of connecting and listing: not the transfer's rate
    bar.add("a", 1)
    assert "ETA --:--" in out.getvalue()  # no guess from the first bytes (it read 86077:57)
    bar.started -= 10  # 10 s since the first byte
    bar.shown = 0
    bar.add("a", 99)  # 10 B/s, 900 B left: 90 s
    assert "ETA 1:30" in out.getvalue().split("\r")[-1], out.getvalue()


def test_resumed_bytes_are_done_not_speed_and_nothing_is_drawn_into_a_log():
    import time
    out = io.StringIO()
    bar = Progress(200 << 20, out=out, draw=True)
    bar.add("big.bin", 190 << 20, False)  # what the part already held
    bar.add("big.bin", 1 << 20)
    bar.started -= 2  # 1 MiB in 2 s
    assert 0.4 * (1 << 20) < bar.rate() < 0.6 * (1 << 20)  # not 95 MiB/s
    first = out.getvalue()
    assert "--/s" in first and "ETA --:--" in first  # no rate from the first instant (read 73 GiB/s)
    bar.end()
    log = io.StringIO()
    quiet = Progress(10, out=log)  # a StringIO is no terminal
    quiet.add("a", 5)
    quiet.say("  a: failed")
    assert log.getvalue() == "  a: failed\n"
    assert time.monotonic() >= bar.started


def test_push_summary_reads_as_words():
    from tui.cli.push_cmd import summary
    assert summary({"dir": 2, "unusual": 2, "sent": 4, "link": 1, "up to date": 1}) == \
        "4 sent, 1 up to date, 2 folders, 1 link, 2 not sent (listed above)"
    assert summary({"dir": 1}) == "1 folder"
