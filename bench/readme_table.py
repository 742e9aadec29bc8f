"""The README's Benchmarks table, from the benches' own output (issue 26).

    python bench/status_time.py --runs 5 --rtt-ms 200 | tee /tmp/status.out
    python bench/checklist_bench.py --mb 300 --runs 3 --rtt-ms 200 | tee /tmp/checklist.out
    python bench/readme_table.py /tmp/status.out /tmp/checklist.out

Reads the `RESULT {json}` lines the benches print (one per figure, with its peer measured in
the same window) and prints the table with the date and the machine it ran on, so the next run
regenerates it the same way. Paste it over the table in README.md's Benchmarks section."""

import argparse
import datetime
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
    if rec.get("unit") == "cpu":
        return "%.2f %% of a core" % (rec["ours_s"] * 100)
    if "ours_mb_s" in rec:
        return "%.1f MB/s (%.1f s)" % (rec["ours_mb_s"], rec["ours_s"])
    return "%.0f ms" % (rec["ours_s"] * 1000)


def peer_value(rec):
    if rec.get("unit") == "cpu":
        return "%.2f %%" % (rec["peer_s"] * 100)
    if "peer_mb_s" in rec:
        return "%.1f MB/s" % rec["peer_mb_s"]
    return "%.0f ms" % (rec["peer_s"] * 1000)


def ratio(rec):
    text = "%.2f×" % rec["ratio"]
    if "ratio_min" in rec:
        text += " (%.2f–%.2f)" % (rec["ratio_min"], rec["ratio_max"])
    return text


def target(rec):
    if rec.get("target") is None:
        return ""
    return ("≥ %.1f× (speed)" if rec.get("higher_is_better") else "≤ %.1f×") % rec["target"]


def rows(recs):
    yield "| figure (bench) | via | gputui | peer (same window) | ratio, median (range) | target |"
    yield "|---|---|---|---|---|---|"
    for r in recs:
        cells = ("%s (`%s.py`)" % (r["figure"], r["bench"]), r["via"], value(r),
                 "%s: %s" % (r["peer"], peer_value(r)), ratio(r), target(r))
        yield "| %s |" % " | ".join(c.replace("|", "\\|") for c in cells)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outputs", nargs="+", help="files holding the benches' output")
    args = ap.parse_args()
    print("Generated %s on %s." % (datetime.date.today().isoformat(), machine()))
    print("From: %s." % ", ".join(source(path) for path in args.outputs))
    print()
    for line in rows(list(results(args.outputs))):
        print(line)


if __name__ == "__main__":
    main()
