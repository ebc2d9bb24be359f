#!/usr/bin/env python3
"""Pairs tandem_benchmark's JSON with the peers' METRIC lines and prints a
markdown table: metric, Tandem, each peer, ratio (Tandem / peer) and the
row's performance goal.

  compare.py --ours ours.json --peer torch=torch.txt --peer jax=jax.txt
"""
import argparse
import json
import re

# metric -> (unit, goal text)
GOALS = {
    "workload2/slice_cpu_with_gpu": ("us", "<= 5 us"),
    "workload2/slice_gpu": ("us", "<= 20 us"),
    "workload1/b4096/table_cpu_rest_gpu": ("us", "<= 300 us"),
    "workload1/b4096/all_gpu": ("us", "<= 25 us"),
    "workload1/b1/table_cpu_rest_gpu": ("us", ""),
    "workload1/b1/all_gpu": ("us", ""),
    "dispatch/gpu": ("us_per_op", "<= 5 us"),
    "dispatch/gpu_graph": ("us_per_op", "<= 1 us"),
    "dispatch/cpu": ("us_per_op", "<= 0.5 us"),
    "mlp/4x1024_b4096_step": ("us", ">= PyTorch"),
    "mlp/4x1024_b4096_tflops": ("TFLOP/s", ">= 95% of cuBLAS SGEMM"),
    "sgemm/4096x1024x1024_tflops": ("TFLOP/s", "reference for the mlp goal"),
    "embedding_cpu/sparse_lookup_sgd_150d": ("rows/s", ">= 40 M rows/s"),
    "copy/gpu_H2D_pinned_overlap_sgemm": ("GB/s", ">= 50 GB/s, overlapped with compute"),
    "collective/gpu_allreduce_1MiB": ("us", "adds <= 10 us to a copy (added_us)"),
    "collective/gpu_allreduce_25MiB": ("us", "adds <= 10 us to a copy (added_us)"),
    "collective/gpu2_allreduce_64MiB": ("us", "bus bandwidth >= 90% of PyTorch+NCCL's"),
    "collective/gpu2_allreduce_256MiB": ("us", "bus bandwidth >= 90% of PyTorch+NCCL's"),
    "data_parallel/mlp_gpux2/4x1024_b4096_per_replica": ("us", "2-GPU scaling >= 1.9x"),
}


def load_ours(path):
    data = json.load(open(path))
    out = {}
    for b in data.get("benchmarks", []):
        name = b["name"]
        if b.get("aggregate_name") not in (None, "median"):
            continue
        name = re.sub(r"_median$", "", b.get("run_name", name))
        name = re.sub(r"/real_time$", "", name)
        if "error_occurred" in b and b["error_occurred"]:
            continue
        if name.startswith("dispatch/"):
            out[name] = (b["us_per_op"] * 1e6, "us_per_op")
        elif name.startswith("copy/") and "overlap_pct" in b:
            # copy under compute (overlap_benchmark.cc): GB/s while overlapped,
            # and how much of the shorter of copy and compute was hidden.
            out[name] = (b["GBps"], "GB/s")
            out[name + "_overlap"] = (b["overlap_pct"], "%")
        elif name.startswith("copy/"):
            out[name] = (b["bytes_per_second"] / 1e9, "GB/s")
        elif name.startswith("embedding_cpu/"):
            out[name] = (b["rows_per_s"], "rows/s")
        else:
            scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
            out[name] = (b["real_time"] * scale, "us")
        if "tflops" in b:  # mlp/..._step -> mlp/..._tflops, sgemm/MxKxN -> sgemm/MxKxN_tflops
            out[re.sub(r"_step$", "", name) + "_tflops"] = (b["tflops"], "TFLOP/s")
        for key in ("h2d_per_iter", "d2h_per_iter"):
            if key in b:
                out.setdefault("_copies", {})[name] = (b.get("h2d_per_iter", 0), b.get("d2h_per_iter", 0))
    return out


def load_peer(path):
    out = {}
    for line in open(path):
        m = re.match(r"METRIC (\S+) (\S+) (\S+)", line)
        if m:
            out[m.group(1)] = (float(m.group(2)), m.group(3))
    return out


def fmt(v):
    if v is None:
        return "—"
    return f"{v:.3g}" if abs(v) < 1e4 else f"{v:.3e}"


def sgemm_share(name, ours):
    """For mlp[_<place>]/4x1024_b<B>_tflops: "Tandem at N% of its sgemm
    row" (sgemm[_<place>]/<B>x1024x1024_tflops), the goal's ratio, when
    both rows are there."""
    m = re.match(r"mlp(_\w+)?/4x1024_b(\d+)_tflops$", name)
    sgemm = ours.get(f"sgemm{m.group(1) or ''}/{m.group(2)}x1024x1024_tflops") if m else None
    if name not in ours or not sgemm:
        return ""
    return f"Tandem at {100 * ours[name][0] / sgemm[0]:.0f}% of its sgemm row"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ours", required=True)
    ap.add_argument("--peer", action="append", default=[], help="name=path")
    args = ap.parse_args()
    ours = load_ours(args.ours)
    copies = ours.pop("_copies", {})
    peers = [(p.split("=", 1)[0], load_peer(p.split("=", 1)[1])) for p in args.peer]
    names = sorted(set(ours) | {n for _, d in peers for n in d})
    header = ["metric", "unit", "Tandem", "copies/iter (H2D+D2H)"] + \
             [p for p, _ in peers] + [f"Tandem/{p}" for p, _ in peers] + ["goal"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for n in names:
        mine = ours.get(n, (None, None))
        unit = mine[1] or next((d[n][1] for _, d in peers if n in d), "")
        row = [n, unit, fmt(mine[0])]
        c = copies.get(n)
        row.append(f"{int(c[0])}+{int(c[1])}" if c else "")
        for _, d in peers:
            row.append(fmt(d.get(n, (None,))[0]))
        for _, d in peers:
            pv = d.get(n, (None,))[0]
            row.append(fmt(mine[0] / pv) if mine[0] is not None and pv else "—")
        row.append("; ".join(t for t in (GOALS.get(n, ("", ""))[1], sgemm_share(n, ours)) if t))
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
