#!/usr/bin/env python3
"""PaddlePaddle (CPU wheel) versions of Tandem's CPU benchmarks, written as
an expert user would (dygraph for training, and a cached static-graph
program for dispatch too). Prints one line per metric:
`METRIC <name> <value> <unit>`, with the names tandem_benchmark uses, so
benchmarks/compare.py can pair them. CPU rows only: the wheel from PyPI has
no GPU support.

  python3 -m venv .venv-peers && .venv-peers/bin/pip install paddlepaddle
  .venv-peers/bin/python3 benchmarks/peers/paddle_bench.py [--rows N] [--mlp-batch B] [--quick]

Rows (the models are torch_bench.py's, on the CPU):
  dispatch/cpu                  us per op of a chain of 100 tiny scale ops, dygraph
  dispatch/cpu_static           the same chain as one static-graph program per run
  embedding_cpu/sparse_lookup_sgd_150d  rows/s: the gather and the SGD row
                                update of a given gradient (index_add_), 65536
                                ids, [rows, 150]
  embedding_cpu/full_step_150d  rows/s: the whole step (lookup, l2 normalize,
                                mean squared error to 0.5, backward, sparse SGD)
  mlp_cpu/4x1024_b<B>_step      us per training step of 4 x Linear(1024), relu
                                between, MSE, SGD lr 0.01 (+ _tflops, counting
                                3 products of 2*B*1024*1024 per layer)
  sgemm_cpu/<B>x1024x1024       us per float32 matmul (+ _tflops)
Threads: OMP_NUM_THREADS, default every CPU of the machine (as Tandem's
OpenMP kernels).
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count()))
os.environ.setdefault("GLOG_minloglevel", "2")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.nn.functional as F  # noqa: E402


def timeit(fn, iters, warmup=10, repeats=5):
    """Median over `repeats` of the mean time per call, in microseconds."""
    for _ in range(warmup):
        fn()
    results = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        results.append((time.perf_counter() - t0) / iters * 1e6)
    return statistics.median(results)


def metric(name, value, unit):
    print(f"METRIC {name} {value:.4g} {unit}", flush=True)


def dispatch(iters):
    x = paddle.ones([1])

    def chain():
        h = x
        for _ in range(100):
            h = paddle.scale(h, 1.0)
        return h

    with paddle.no_grad():
        metric("dispatch/cpu", timeit(chain, iters) / 100, "us_per_op")


def dispatch_static(iters):
    """The chain as a static program, run by an Executor with its program
    cache (PaddlePaddle's way; Tandem's Plan is the same idea)."""
    paddle.enable_static()
    try:
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            h = paddle.full([1], 1.0, "float32")  # one fill op, counted in the 100
            for _ in range(99):
                h = paddle.scale(h, 1.0)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        run = lambda: exe.run(main, fetch_list=[h], use_program_cache=True)  # noqa: E731
        metric("dispatch/cpu_static", timeit(run, iters) / 100, "us_per_op")
    finally:
        paddle.disable_static()


def embedding_cpu(rows, iters):
    """torch_bench.py's embedding_cpu rows: 65536 random ids into a
    [rows, 150] CPU table."""
    batch, dim, lr = 65536, 150, 0.001
    rng = np.random.default_rng(2)
    ids = paddle.to_tensor(rng.integers(0, rows, batch), dtype="int64")

    # sparse_lookup_sgd_150d: the gather and the sparse SGD update alone, with
    # the output gradient given: weight[ids], then weight[ids[i]] -= lr *
    # grad[i] (index_add_ accumulates repeated ids, as the SelectedRows
    # gradient of Embedding(sparse=True) + SGD does, without autograd).
    weight = paddle.to_tensor(rng.uniform(-0.05, 0.05, (rows, dim)).astype("float32"))
    neg_lr_grad = paddle.to_tensor((-lr * rng.uniform(-1, 1, (batch, dim))).astype("float32"))

    def lookup_sgd():
        out = paddle.gather(weight, ids)
        weight.index_add_(ids, 0, neg_lr_grad)
        return out

    with paddle.no_grad():
        t = timeit(lookup_sgd, iters, warmup=2)
    metric("embedding_cpu/sparse_lookup_sgd_150d", batch / t * 1e6, "rows/s")
    del weight, neg_lr_grad

    # full_step_150d: the whole training step of the embedding workload.
    emb = paddle.nn.Embedding(rows, dim, sparse=True)
    opt = paddle.optimizer.SGD(learning_rate=lr, parameters=emb.parameters())

    def full_step():
        out = F.normalize(emb(ids), axis=-1)
        loss = ((out - 0.5) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()

    t = timeit(full_step, iters, warmup=2)
    metric("embedding_cpu/full_step_150d", batch / t * 1e6, "rows/s")


def mlp(iters, batch, width=1024):
    layers = []
    for _ in range(4):
        layers += [paddle.nn.Linear(width, width), paddle.nn.ReLU()]
    model = paddle.nn.Sequential(*layers[:-1])
    opt = paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
    x = paddle.randn([batch, width])
    y = paddle.randn([batch, width])

    def step():
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()

    t = timeit(step, iters, warmup=2)
    flops = 3 * 2 * batch * width * width * 4
    metric(f"mlp_cpu/4x1024_b{batch}_step", t, "us")
    metric(f"mlp_cpu/4x1024_b{batch}_tflops", flops / t / 1e6, "TFLOP/s")


def sgemm(iters, m, k=1024, n=1024):
    a = paddle.randn([m, k])
    b = paddle.randn([k, n])
    with paddle.no_grad():
        t = timeit(lambda: paddle.matmul(a, b), iters)
    metric(f"sgemm_cpu/{m}x{k}x{n}", t, "us")
    metric(f"sgemm_cpu/{m}x{k}x{n}_tflops", 2 * m * k * n / t / 1e6, "TFLOP/s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000, help="embedding table rows")
    ap.add_argument("--mlp-batch", type=int, default=256, help="batch of the mlp and sgemm rows")
    ap.add_argument("--quick", action="store_true", help="few iterations (smoke run)")
    args = ap.parse_args()
    it = 20 if args.quick else 200
    paddle.set_device("cpu")
    paddle.seed(1)
    print(f"# paddle {paddle.__version__}, CPU, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}",
          flush=True)
    dispatch(it)
    dispatch_static(it)
    embedding_cpu(args.rows, max(it // 20, 3))
    mlp(max(it // 20, 3), args.mlp_batch)
    sgemm(max(it // 4, 5), args.mlp_batch)


if __name__ == "__main__":
    main()
