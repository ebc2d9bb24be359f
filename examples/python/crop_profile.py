"""Workload 2 from Python: shape -> slice -> crop_tensor profiled with the slice
on the default place (the GPU when there is one), then under
device_guard("cpu"), as PaddlePaddle's device_guard documentation does.
Prints the profiler's report for both and the copies per iteration before ->
after (2 -> 0 on an accelerator).

    bazel run //examples/python:crop_profile -- --steps=1000
    bazel run //examples/python:crop_profile -- --place=sim:0 --steps=50 --advise
"""

import argparse
import sys

import tandem
from common import parse_place


def build(slice_on_cpu):
    main_program, startup_program = tandem.Program(), tandem.Program()
    with tandem.program_guard(main_program, startup_program):
        data1 = tandem.layers.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype="float32")
        data2 = tandem.layers.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype="float32")
        shape = tandem.layers.shape(data2)
        with tandem.device_guard("cpu" if slice_on_cpu else None):
            shape = tandem.layers.slice(shape, axes=[0], starts=[0], ends=[4])
        out = tandem.layers.crop_tensor(data1, shape=shape)
    return main_program, out


def profile(place, slice_on_cpu, args):
    main_program, out = build(slice_on_cpu)
    exe = tandem.Executor(place)
    if args.print_placement:
        print(exe.placement_table(main_program, [], [out]))
    where = "cpu" if slice_on_cpu else str(place)
    print("\n=== Profile: slice on %s ===" % where, flush=True)
    with tandem.profiler.profiler(args.profile_state, args.sort_key,
                                  warmup_runs=args.warmup) as prof:
        for _ in range(args.warmup + args.steps):
            result, = exe.run(main_program, fetch_list=[out])
    if result.shape != (1, 3, 5, 5):
        raise RuntimeError("crop_tensor produced %s" % (result.shape,))
    stats = exe.last_run_stats
    steps = sorted(prof.profile.steady_step_ms())
    print("slice on %-6s: %d H2D + %d D2H copies per iteration (%d sync), median %.4f ms per "
          "iteration over %d iterations" % (where, stats.copies_h2d, stats.copies_d2h,
                                            stats.sync_copies, steps[len(steps) // 2],
                                            args.steps))
    if args.advise:
        print("=== Advice: slice on %s ===\n%s" % (where, prof.profile.advice()))
    return stats.sync_copies, steps[len(steps) // 2]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=1000, help="profiled iterations per placement")
    p.add_argument("--warmup", type=int, default=10, help="untimed iterations first")
    p.add_argument("--place", default="", help="gpu:N, sim:N or cpu (default: gpu:0 if present)")
    p.add_argument("--profile_state", default="All", help="CPU, GPU or All")
    p.add_argument("--sort_key", default="total", help="default, calls, total, max, min or ave")
    p.add_argument("--print_placement", action="store_true", help="print each placement table")
    p.add_argument("--advise", action="store_true", help="print the copy advisor's verdict")
    args = p.parse_args(argv)
    if args.steps <= 0 or args.warmup < 0:
        p.error("--steps must be > 0 and --warmup >= 0")
    place = parse_place(args.place)
    print("workload 2 (shape -> slice -> crop_tensor) on %s" % place)
    before, before_ms = profile(place, False, args)
    after, after_ms = profile(place, True, args)
    print("before -> after: sync copies per step %d -> %d; steady-state step time median "
          "%.4f -> %.4f ms" % (before, after, before_ms, after_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
