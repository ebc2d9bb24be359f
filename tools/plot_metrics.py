#!/usr/bin/python3
"""Draws training curves from the --metrics_out files of the example trainers.

Each input is a JSON Lines file written by fashion_mnist, ctr or
embedding_offload with --metrics_out=FILE.jsonl: "train" lines (step, loss,
examples_per_s, copies per step) and "eval" lines (step, and accuracy, or
logloss and AUC). The picture has one panel for the training loss and one
for each evaluation metric the files hold, every file a curve of its own,
against the training step.

  tools/plot_metrics.py run.jsonl --out=curves.png
  tools/plot_metrics.py cpu.jsonl gpu.jsonl --label=cpu --label=gpu --out=cmp.png

Needs matplotlib (Debian: apt-get install python3-matplotlib, which serves
/usr/bin/python3, the interpreter this script names).
"""

import argparse
import json
import os
import sys

EVAL_METRICS = [("accuracy", "test accuracy"), ("auc", "held-out AUC"),
                ("logloss", "held-out logloss")]


def read_metrics(path):
    """Returns (train, eval): lists of dicts from the file's lines, in order.

    Exits with a message naming the file and line for unreadable input; a
    last line cut short (a run killed while writing) is skipped with a note.
    """
    train, evals = [], []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        sys.exit(f"plot_metrics: cannot read '{path}': {e.strerror}")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            if number == len(lines):  # no newline after it: cut short
                print(f"plot_metrics: {path}:{number}: incomplete last line skipped",
                      file=sys.stderr)
                continue
            sys.exit(f"plot_metrics: {path}:{number}: not a JSON object: {e.msg}")
        if not isinstance(record, dict) or "step" not in record:
            sys.exit(f"plot_metrics: {path}:{number}: a line needs a \"step\"")
        kind = record.get("kind")
        if kind == "train":
            train.append(record)
        elif kind == "eval":
            evals.append(record)
        else:
            sys.exit(f"plot_metrics: {path}:{number}: \"kind\" must be \"train\" or \"eval\", "
                     f"got {kind!r}")
    return train, evals


def series(records, key):
    """(steps, values) of the records that have a number for `key`."""
    points = [(r["step"], r[key]) for r in records if isinstance(r.get(key), (int, float))]
    return [p[0] for p in points], [p[1] for p in points]


def main(argv):
    parser = argparse.ArgumentParser(
        description="Draws the training loss and the evaluation metrics (accuracy, AUC, "
        "logloss) of one or more --metrics_out files into a PNG, one curve per file.",
        epilog="example: tools/plot_metrics.py /tmp/fm.jsonl --out=/tmp/fm.png")
    parser.add_argument("files", nargs="+", metavar="FILE.jsonl",
                        help="metrics files written by a trainer's --metrics_out")
    parser.add_argument("--out", required=True, metavar="FILE.png",
                        help="the picture to write (PNG)")
    parser.add_argument("--label", action="append", default=[],
                        help="legend name of a file, once per file in order (default: the "
                        "file names)")
    parser.add_argument("--title", default="", help="title above the panels")
    parser.add_argument("--dpi", type=int, default=100, help="resolution (default 100)")
    args = parser.parse_args(argv)
    if args.label and len(args.label) != len(args.files):
        parser.error(f"--label given {len(args.label)} times for {len(args.files)} files; "
                     "give it once per file or not at all")
    if not args.out.endswith(".png"):
        parser.error(f"--out must name a .png file, got '{args.out}'")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit(f"plot_metrics: matplotlib is not installed for {sys.executable}; on Debian: "
                 "apt-get install python3-matplotlib (for /usr/bin/python3)")

    labels = args.label or [os.path.basename(f) for f in args.files]
    runs = [(label,) + read_metrics(path) for label, path in zip(labels, args.files)]
    panels = [("loss", "training loss", "train")]
    for key, title in EVAL_METRICS:
        if any(series(evals, key)[0] for _, _, evals in runs):
            panels.append((key, title, "eval"))
    if not any(series(train, "loss")[0] for _, train, _ in runs):
        sys.exit("plot_metrics: no training loss in " + ", ".join(args.files))

    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8), squeeze=False)
    for ax, (key, title, kind) in zip(axes[0], panels):
        for label, train, evals in runs:
            steps, values = series(train if kind == "train" else evals, key)
            if steps:
                ax.plot(steps, values, marker="o" if kind == "eval" else None,
                        markersize=4, label=label)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
        if len(runs) > 1:
            ax.legend()
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    # Write beside the target, then rename: a reader never sees half a PNG.
    tmp = args.out + ".tmp"
    try:
        fig.savefig(tmp, dpi=args.dpi, format="png")
        os.replace(tmp, args.out)
    except OSError as e:
        sys.exit(f"plot_metrics: cannot write --out '{args.out}': {e.strerror}")
    print(f"wrote {args.out}: {', '.join(t for _, t, _ in panels)} for {len(runs)} run(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
