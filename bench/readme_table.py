"""The user guide's Benchmarks table (docs/guide/benchmarks.md), from the benches' own output.

Issue 26; the table lived in the README until issue 37 moved it into the guide.

    python bench/status_time.py --runs 5 --rtt-ms 200 | tee /tmp/status.out
    python bench/checklist_bench.py --mb 300 --runs 3 --rtt-ms 200 | tee /tmp/checklist.out
    python bench/transfer.py --mb 200 --runs 3 --rtt-ms 300 | tee /tmp/transfer.out
    python bench/app_cost.py | tee /tmp/app_cost.out
    python bench/latency.py | tee /tmp/latency.out
    python bench/readme_table.py --write /tmp/status.out /tmp/checklist.out /tmp/transfer.out /tmp/app_cost.out /tmp/latency.out

Reads the `RESULT {json}` lines the benches print (one per figure, with its peer measured in
the same window) and prints the table with the date and the machine it ran on, so the next run
regenerates it the same way. With --write it replaces the block between the bench-table markers
of docs/guide/benchmarks.md and benchmarks.zh-CN.md (PAGES) instead; tests/unit/test_user_docs.py
regenerates the rows from the saved runs (bench/results/) a page's `From:` line names."""

import argparse
import datetime
import glob
import json
import os
import platform
import re


def machine():
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return "%s, %d CPUs (%s), Linux %s, load average %.1f while generating" % (
        platform.node() or "?", os.cpu_count() or 0, model, platform.release(), load)


def source(path):
    """An input as the table names it: a saved run says its date (bench/results/NAME-DATE.out),
    so rows not re-run with the others are not passed off as measured today."""
    name = os.path.basename(path)
    found = re.search(r"\d{4}-\d{2}-\d{2}", name)
    return "`%s` (measured %s)" % (name, found.group(0)) if found else "`%s` (this run)" % name


def results(paths):
    for path in paths:
        for line in open(path, errors="replace"):
            if line.startswith("RESULT "):
                yield json.loads(line[len("RESULT "):])


def value(rec):
    if rec.get("unit") == "laptop_cpu":  # transfer.py's pull, whole commands (issue 38)
        return "%.2f s CPU (%.2f s/GB)" % (rec["ours_s"], rec["ours_s_per_gb"])
    if rec.get("unit") == "laptop_rss":
        return "peak RSS %.1f MB" % rec["ours_mb"]
    if rec.get("unit") == "cpu":
        if rec.get("rss_over_connected_floor_mb") is not None:  # issue 38: over the connected floor
            rss = ", RSS %.1f MB (%+.1f MB over floor+ssh+sqlite)" % (rec["rss_mb"], rec["rss_over_connected_floor_mb"])
        else:
            rss = ", RSS %.1f MB (%+.1f MB)" % (rec["rss_mb"], rec["rss_over_floor_mb"]) if "rss_mb" in rec else ""
        return "%.2f %% of a core%s" % (rec["ours_s"] * 100, rss)
    if "ours_mb_s" in rec:
        return "%.1f MB/s (%.1f s)" % (rec["ours_mb_s"], rec["ours_s"])
    return "%.0f ms" % (rec["ours_s"] * 1000)


def peer_value(rec):
    if rec.get("unit") == "laptop_cpu":
        return "%.2f s CPU (%.2f s/GB)" % (rec["peer_s"], rec["peer_s_per_gb"])
    if rec.get("unit") == "laptop_rss":
        return "peak RSS %.1f MB" % rec["peer_mb"]
    if rec.get("unit") == "cpu":
        rss = ", RSS %.1f MB" % rec["floor_rss_mb"] if "floor_rss_mb" in rec else ""
        return "%.2f %%%s" % (rec["peer_s"] * 100, rss)
    if "peer_mb_s" in rec:
        return "%.1f MB/s" % rec["peer_mb_s"]
    return "%.0f ms" % (rec["peer_s"] * 1000)


def ratio(rec):
    text = "%.2f×" % rec["ratio"]
    if "ratio_min" in rec:
        text += " (%.2f–%.2f)" % (rec["ratio_min"], rec["ratio_max"])
    return text


def target(rec):
    if "target_mb" in rec:
        return "≤ %d MB" % rec["target_mb"]
    if rec.get("target") is None:
        return ""
    return ("≥ %.1f× (speed)" if rec.get("higher_is_better") else "≤ %.1f×") % rec["target"]


def rows(recs):
    yield "| figure (bench) | via | gputui | peer (same window) | ratio, median (range) | target |"
    yield "|---|---|---|---|---|---|"
    for r in recs:
        if "lost_bytes" in r:  # transfer.py's resume: what a cut connection cost, no peer
            cells = ("%s (`%s.py`)" % (r["figure"], r["bench"]), r["via"],
                     "%d bytes lost (%.2f chunks)" % (r["lost_bytes"], r["lost_chunks"]), "", "",
                     "≤ %d chunk" % r["target_chunks"])
            yield "| %s |" % " | ".join(cells)
            continue
        cells = ("%s (`%s.py`)" % (r["figure"], r["bench"]), r["via"], value(r),
                 "%s: %s" % (r["peer"], peer_value(r)), ratio(r), target(r))
        yield "| %s |" % " | ".join(c.replace("|", "\\|") for c in cells)


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ("docs/guide/benchmarks.md", "docs/guide/benchmarks.zh-CN.md")
BEGIN, END = "<!-- bench-table:begin", "<!-- bench-table:end -->"


def block(outputs):
    """The generated text: when and where, from which runs, then the table."""
    lines = ["Generated %s on %s." % (datetime.date.today().isoformat(), machine()),
             "From: %s." % ", ".join(source(path) for path in outputs), ""]
    return "\n".join(lines + list(rows(list(results(outputs))))) + "\n"


def with_block(text, generated):
    """`text` (a page) with the block between its bench-table markers replaced."""
    head, sep, rest = text.partition(BEGIN)
    marker, _nl, rest = rest.partition("\n")
    _old, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError("no bench-table markers")
    return head + BEGIN + marker + "\n\n" + generated + "\n" + END + tail


def page_inputs(text):
    """The saved runs (bench/results/NAME) a page's `From:` line names."""
    found = re.search(r"^From: (.*)$", text.partition(BEGIN)[2], re.M)
    names = re.findall(r"`([^`]+\.out)`", found.group(1)) if found else []
    return [os.path.join(ROOT, "bench", "results", n) for n in names]


def table_rows(text):
    """The table lines between a page's markers."""
    inside = text.partition(BEGIN)[2].partition(END)[0]
    return [line for line in inside.splitlines() if line.startswith("|")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outputs", nargs="+", help="files holding the benches' output (globs are expanded)")
    ap.add_argument("--write", action="store_true",
                    help="put the table into %s instead of printing it" % " and ".join(PAGES))
    args = ap.parse_args()
    outputs = [p for arg in args.outputs for p in (sorted(glob.glob(arg)) or [arg])]
    generated = block(outputs)
    if not args.write:
        print(generated, end="")
        return
    for rel in PAGES:
        path = os.path.join(ROOT, rel)
        with open(path, encoding="utf-8") as f:
            text = with_block(f.read(), generated)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print("wrote", rel)


if __name__ == "__main__":
    main()
