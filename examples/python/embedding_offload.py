"""Workload 1 from Python: a large embedding table kept on the CPU under
device_guard("cpu") while l2_normalize, the loss and SGD run on the default
place (the GPU when there is one). The program reads nearly line for line
as it does in PaddlePaddle; --no_guard puts the table on the default place
too.

    bazel run //examples/python:embedding_offload -- --rows=10000000 --steps=200
    bazel run //examples/python:embedding_offload -- --place=sim:0 --rows=100000   # CI size
    bazel run //examples/python:embedding_offload -- --no_guard --place=sim:0

With --batch_size=1 (the default) it builds and trains exactly the C++
example's program (//examples/embedding_offload): the same losses, bit for
bit, on the CPU. Larger batches draw random ids (numpy's generator, not the
C++ example's).
"""

import argparse
import sys
import time

import numpy as np

import tandem
from common import MetricsLog, copies, parse_place


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10000000, help="embedding table rows")
    p.add_argument("--embedding_dim", type=int, default=150, help="embedding width")
    p.add_argument("--batch_size", type=int, default=1,
                   help="ids per step (1: id 128 every step; more: random ids each step)")
    p.add_argument("--steps", type=int, default=100, help="training steps")
    p.add_argument("--log_every", type=int, default=10, help="print every N steps")
    p.add_argument("--lr", type=float, default=0.001, help="SGD learning rate")
    p.add_argument("--place", default="", help="gpu:N, sim:N or cpu (default: gpu:0 if present)")
    p.add_argument("--no_guard", action="store_true", help="no device_guard: the table too on --place")
    p.add_argument("--is_sparse", action="store_true", help="sparse (SelectedRows) table gradient")
    p.add_argument("--print_placement", action="store_true", help="print the placement table")
    p.add_argument("--seed", type=int, default=1, help="seed of the random ids")
    p.add_argument("--metrics_out", default="", help="one JSON line per progress line")
    args = p.parse_args(argv)
    if args.rows <= 0 or args.embedding_dim <= 0 or args.batch_size <= 0 or args.steps < 0:
        p.error("--rows, --embedding_dim and --batch_size must be > 0 and --steps >= 0")
    place = parse_place(args.place)

    main_program, startup_program = tandem.Program(), tandem.Program()
    with tandem.program_guard(main_program, startup_program):
        ids = tandem.data(name="ids", shape=[args.batch_size], dtype="int64")
        label = tandem.layers.fill_constant(shape=[args.batch_size, args.embedding_dim],
                                            dtype="float32", value=0.5)
        with tandem.device_guard(None if args.no_guard else "cpu"):
            emb_out = tandem.layers.embedding(
                input=ids, size=[args.rows, args.embedding_dim], is_sparse=args.is_sparse,
                param_attr=tandem.ParamAttr(
                    name="emb_w", initializer=tandem.initializer.Uniform(-0.05, 0.05, seed=7)))
        out = tandem.layers.l2_normalize(x=emb_out, axis=-1)
        cost = tandem.layers.square_error_cost(input=out, label=label)
        avg_cost = tandem.layers.mean(cost)
        sgd_optimizer = tandem.optimizer.SGD(learning_rate=args.lr)
        sgd_optimizer.minimize(avg_cost)

    print("embedding %d x %d float32 (%.2f GiB) on %s, rest on %s, batch %d, %s gradient"
          % (args.rows, args.embedding_dim, args.rows * args.embedding_dim * 4.0 / (1 << 30),
             place if args.no_guard else "cpu", place, args.batch_size,
             "sparse" if args.is_sparse else "dense"), flush=True)
    exe = tandem.Executor(place)
    start = time.perf_counter()
    exe.run(startup_program)
    print("initialised in %.2f s" % (time.perf_counter() - start), flush=True)
    if args.print_placement:
        print(exe.placement_table(main_program, ["ids"], [avg_cost]))

    metrics = MetricsLog(args.metrics_out)
    rng = np.random.default_rng(args.seed)
    first = last = None
    clock, timed = None, 0
    for step in range(args.steps):
        if args.batch_size == 1:
            feed_ids = np.array([min(128, args.rows - 1)], np.int64)
        else:
            feed_ids = rng.integers(0, args.rows, size=args.batch_size, dtype=np.int64)
        loss, = exe.run(main_program, feed={"ids": feed_ids}, fetch_list=[avg_cost])
        last = float(loss[0])
        if first is None:
            first, clock = last, time.perf_counter()  # the first step is not timed
        else:
            timed += 1
        if step % args.log_every == 0 or step + 1 == args.steps:
            stats = exe.last_run_stats
            rate = timed / (time.perf_counter() - clock) if timed else 0.0
            print("step %5d  loss %.6f  %8.1f steps/s  copies/step: H2D %d (%d B), D2H %d "
                  "(%d B), fetch %d" % (step, last, rate, stats.copies_h2d, stats.bytes_h2d,
                                        stats.copies_d2h, stats.bytes_d2h, stats.fetch_copies),
                  flush=True)
            metrics.write("train", step=step, loss=last, steps_per_s=rate,
                          examples_per_s=rate * args.batch_size, **copies(stats))
    metrics.close()
    if first is not None:
        print("loss %.6f -> %.6f over %d steps (%s)" % (first, last, args.steps,
              "decreasing" if last < first else "NOT decreasing"))
        if args.steps > 1 and not last < first:
            print("error: the loss did not decrease", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
