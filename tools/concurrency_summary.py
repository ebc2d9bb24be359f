#!/usr/bin/env python3
"""Summary of tools/measure_concurrency.sh's raw outputs: ctr examples/s,
fashion_mnist s/epoch and tandem_benchmark medians, each concurrent and
in-order (and with graph capture, --cuda_graph, where it was run: ctr and
workload1 with --graphs), and the practicality ratios (all-device time /
mixed time). With several rounds (NAME.rN.txt / .json), each figure is the
median over the rounds, its spread (min-max) beside it.

  concurrency_summary.py --dir=$OUT/concurrency --place=gpu:0
"""
import argparse
import glob
import json
import os
import re
import statistics

MODES = ("concurrent", "in_order")
GRAPH = "graph"  # --cuda_graph runs (measure_concurrency.sh --graphs)
HEADERS = {"concurrent": "concurrent", "in_order": "in-order", GRAPH: "graphs"}


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def ok(text):
    return re.search(r"^exit status 0$", text, re.M) is not None


def round_paths(d, stem, ext):
    """The files of a run: STEM.EXT (one round) or STEM.rN.EXT (rounds)."""
    return sorted(glob.glob(os.path.join(d, f"{stem}.{ext}")) +
                  glob.glob(os.path.join(d, f"{stem}.r*.{ext}")))


class Rounds:
    """A figure's values over the rounds: median (None when none succeeded)
    and spread."""

    def __init__(self, values):
        self.values = [v for v in values if v is not None]
        self.failed = len(values) - len(self.values)

    @property
    def median(self):
        return statistics.median(self.values) if self.values else None

    def cell(self, digits=3):
        text = fmt(self.median, digits)
        if len(self.values) > 1:
            text += f" ({fmt(min(self.values), digits)}-{fmt(max(self.values), digits)})"
        return text + (f" {self.failed} FAILED" if self.failed and self.values else "")


def ctr_examples_per_s(text):
    """examples/s of the last progress line (the first step is not timed)."""
    rates = re.findall(r"^step\s+\d+\s+loss [0-9.]+\s+([0-9.]+) examples/s", text, re.M)
    return float(rates[-1]) if ok(text) and rates else None


def fmnist_s_per_epoch(text):
    """Training seconds of the last finished epoch (epoch 2: warm-up excluded)."""
    times = re.findall(r"^epoch \d+/\d+  done .*\(train ([0-9.]+) s", text, re.M)
    return float(times[-1]) if ok(text) and times else None


def bench_medians(paths):
    """name -> median entry of Google Benchmark JSON files (errors left out)."""
    entries = []
    for path in paths:
        try:
            with open(path) as f:
                entries += json.load(f).get("benchmarks", [])
        except (OSError, ValueError):
            pass
    out = {}
    for b in entries:
        if b.get("aggregate_name") != "median" or b.get("error_occurred"):
            continue
        out[re.sub(r"/real_time$", "", b["run_name"])] = b
    return out


def bench_value(b):
    """(value, unit): us per op for dispatch rows, else real time in us."""
    if "us_per_op" in b:
        return b["us_per_op"] * 1e6, "us/op"
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
    return b["real_time"] * scale, "us"


def fmt(v, digits=3):
    if v is None:
        return "FAILED"
    return f"{v:.{digits}g}" if abs(v) < 10 ** digits else f"{v:.0f}"


def ratio(a, b):
    return a / b if a is not None and b else None


def table(title, header, rows):
    lines = [title]
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        cells = [str(c).ljust(w) if i == 0 else str(c).rjust(w)
                 for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  " + "  ".join(cells).rstrip())
    return "\n".join(lines)


def ctr_section(d, dev):
    modes = MODES + ((GRAPH,) if round_paths(d, "ctr_all_graph", "txt") else ())
    runs = {(p, m): Rounds([ctr_examples_per_s(read(f))
                            for f in round_paths(d, f"ctr_{p}_{m}", "txt")])
            for p in ("all", "mixed") for m in modes}
    vals = {k: r.median for k, r in runs.items()}
    rows = [[f"all on {dev} (--no_guard)"] + [runs["all", m].cell(4) for m in modes] +
            [fmt(ratio(vals["all", "concurrent"], vals["all", "in_order"]))],
            ["mixed (tables on cpu)"] + [runs["mixed", m].cell(4) for m in modes] +
            [fmt(ratio(vals["mixed", "concurrent"], vals["mixed", "in_order"]))]]
    first = round_paths(d, "ctr_all_concurrent", "txt")
    steps = re.findall(r"^step\s+(\d+)\s+loss", read(first[0]) if first else "", re.M)
    title = f"(a) ctr, {steps[-1] if steps else '?'} steps, examples/s (higher is better)"
    # all-device time / mixed time = mixed examples/s / all-device examples/s
    practical = {m: ratio(vals["mixed", m], vals["all", m]) for m in modes}
    text = table(title, [""] + [HEADERS[m] for m in modes] + ["concurrent/in-order"], rows)
    launches = [line for f in round_paths(d, "ctr_mixed_graph", "txt")
                for line in re.findall(r"launches/step: .*$", read(f), re.M)]
    if launches:
        text += f"\n  mixed with graphs, {launches[-1]}"
    return text, practical


def fmnist_section(d, dev):
    runs = {(p, m): Rounds([fmnist_s_per_epoch(read(f))
                            for f in round_paths(d, f"fmnist_{p}_{m}", "txt")])
            for p in ("all", "mixed") for m in MODES}
    vals = {k: r.median for k, r in runs.items()}
    rows = [[f"all on {dev}"] + [runs["all", m].cell() for m in MODES] +
            [fmt(ratio(vals["all", "in_order"], vals["all", "concurrent"]))],
            ["mixed (--first_layer_on_cpu)"] + [runs["mixed", m].cell() for m in MODES] +
            [fmt(ratio(vals["mixed", "in_order"], vals["mixed", "concurrent"]))]]
    title = "(b) fashion_mnist mlp, s/epoch of epoch 2 (lower is better)"
    practical = {m: ratio(vals["all", m], vals["mixed", m]) for m in MODES}
    return table(title, ["", "concurrent", "in-order", "speed-up"], rows), practical


def bench_section(d, dev):
    modes = MODES + ((GRAPH,) if glob.glob(os.path.join(d, f"bench_*_{GRAPH}*.json")) else ())
    # mode -> row name -> its median entry in each round's files
    rounds = {m: {} for m in modes}
    for m in modes:
        for group in ("workload1", "dispatch_overlap"):
            for path in round_paths(d, f"bench_{group}_{m}", "json"):
                for name, b in bench_medians([path]).items():
                    rounds[m].setdefault(name, []).append(b)
    # the round whose value is the median (the lower middle of an even count):
    # the overlap rows' and practicality's figures come from one round
    runs = {m: {name: sorted(bs, key=lambda b: bench_value(b)[0])[(len(bs) - 1) // 2]
                for name, bs in rounds[m].items()} for m in modes}
    names = sorted(set().union(*(set(runs[m]) for m in modes)))
    rows = []
    for name in names:
        cells, unit = [name], ""
        for m in modes:
            bs = rounds[m].get(name)
            if not bs:
                cells.append("FAILED" if m != GRAPH else "-")
                continue
            unit = bench_value(bs[0])[1]
            cells.append(Rounds([bench_value(b)[0] for b in bs]).cell(4))
        medians = {m: Rounds([bench_value(b)[0] for b in rounds[m].get(name, [])]).median
                   for m in MODES}
        rows.append(cells + [unit, fmt(ratio(medians["in_order"], medians["concurrent"]))])
    overlap = []
    for name in names:
        if not name.startswith("overlap/"):
            continue
        for m in MODES:
            b = runs[m].get(name)
            if b is None:
                continue
            balance = b["cpu_branch_us"] / b["device_branch_us"]
            overlap.append([f"{name} ({m.replace('_', '-')} run)", fmt(b["ratio"]),
                            fmt(b["cpu_branch_us"], 4), fmt(b["device_branch_us"], 4),
                            fmt(balance) + ("" if 0.8 <= balance <= 1.25 else " UNBALANCED"),
                            f"{b['cpu_muls']:.0f}+{b['device_muls']:.0f}"])
    text = table("(c) tandem_benchmark, medians of 3 repetitions, then over the rounds "
                 "(--in_order run: every row in-order)",
                 [""] + [HEADERS[m] for m in modes] + ["unit", "speed-up"],
                 rows or [["no results"] + [""] * (len(modes) + 2)])
    text += "\n\n" + table(
        "    overlap: ratio = step / longer branch (target <= 1.15 concurrent; ~2 in-order);\n"
        "    the branches alone should cost the same (cpu/device ~1; UNBALANCED: the machine\n"
        "    was busy while the CPU branch was calibrated, the ratio means little)",
        ["", "ratio", "cpu_us", "device_us", "cpu/device", "muls"],
        overlap or [["no results", "", "", "", "", ""]])
    practical = {}
    for m in modes:
        all_dev = runs[m].get(f"workload1/b4096/all_{dev}")
        mixed = runs[m].get(f"workload1/b4096/table_cpu_rest_{dev}")
        practical[m] = (ratio(bench_value(all_dev)[0], bench_value(mixed)[0])
                        if all_dev and mixed else None)
    return text, practical


TRIAL = re.compile(r"executor: a plan of (\d+) steps runs (in order|concurrent): "
                   r"([0-9.]+) vs ([0-9.]+) ms per run")


def trial_section(d):
    """The schedule trial's choice in each default-mode run (its log line:
    ExecutorOptions::schedule_trial), by configuration."""
    rows = []
    for path in sorted(glob.glob(os.path.join(d, "*_concurrent*.txt"))):
        name = re.sub(r"_concurrent(\.r\d+)?\.txt$", r"\1", os.path.basename(path))
        for steps, choice, chosen, other in TRIAL.findall(read(path)):
            rows.append([name, f"{steps} steps", choice, f"{chosen} vs {other} ms"])
    return table("(e) schedule trial in the default (concurrent) runs: each plan's choice and "
                 "its per-run times (chosen vs the other)",
                 ["run", "plan", "choice", "times"], rows or [["none logged", "", "", ""]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="measure_concurrency.sh's output folder")
    parser.add_argument("--place", default="gpu:0", help="the device place measured")
    args = parser.parse_args()
    dev = args.place.split(":")[0]
    sections, practical = [], {}
    for name, fn in (("ctr", ctr_section), ("fashion_mnist", fmnist_section),
                     ("workload1 b4096", bench_section)):
        text, practical[name] = fn(args.dir, dev)
        sections.append(text)
    modes = MODES + ((GRAPH,) if any(GRAPH in p for p in practical.values()) else ())
    rows = [[name] + [fmt(practical[name].get(m)) if m in practical[name] else "-" for m in modes]
            for name in practical]
    sections.append(table(f"(d) practicality = all-{dev} time / mixed time "
                          "(1: mixed as fast as all on the device)",
                          [""] + [HEADERS[m] for m in modes], rows))
    print(f"measure_concurrency summary, place {args.place}"
          + ("" if dev == "gpu" else " (no GPU: sim times are host times, not a GPU's)"))
    # The trial's log (one row per run, long) first: the figures end the
    # output, where a caller that keeps only its tail finds them.
    print("\n\n".join([trial_section(args.dir)] + sections))


if __name__ == "__main__":
    main()
