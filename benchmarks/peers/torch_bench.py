#!/usr/bin/env python3
"""PyTorch versions of Tandem's benchmarks, written as an expert user would
(sparse embedding gradients, CUDA graphs where they apply, synchronised
timing). Prints one line per metric: `METRIC <name> <value> <unit>`, with the
names tandem_benchmark uses, so tools/compare.py can pair them.

  python3 torch_bench.py [--rows 10000000] [--quick] [--only mlp,collectives]
"""
import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F


def timeit(fn, iters, warmup=10, repeats=5, sync=True):
    """Median over `repeats` of the mean time per call, in microseconds."""
    for _ in range(warmup):
        fn()
    if sync and torch.cuda.is_available():
        torch.cuda.synchronize()
    results = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        if sync and torch.cuda.is_available():
            torch.cuda.synchronize()
        results.append((time.perf_counter() - t0) / iters * 1e6)
    return statistics.median(results)


def metric(name, value, unit):
    print(f"METRIC {name} {value:.4g} {unit}", flush=True)


def workload2(iters):
    dev = "cuda"

    def slice_gpu():
        data1 = torch.full([1, 3, 8, 8], 1.0, device=dev)
        data2 = torch.full([1, 3, 5, 5], 2.0, device=dev)
        shape = torch.tensor(data2.shape, dtype=torch.int32)      # shape op: host
        sliced = shape.to(dev)[0:4]                                # slice on the GPU
        dims = sliced.cpu().tolist()                               # crop reads it on the host
        return data1[: dims[0], : dims[1], : dims[2], : dims[3]].contiguous()

    def slice_cpu():
        data1 = torch.full([1, 3, 8, 8], 1.0, device=dev)
        data2 = torch.full([1, 3, 5, 5], 2.0, device=dev)
        shape = torch.tensor(data2.shape, dtype=torch.int32)
        dims = shape[0:4].tolist()                                 # slice on the CPU
        return data1[: dims[0], : dims[1], : dims[2], : dims[3]].contiguous()

    metric("workload2/slice_gpu", timeit(slice_gpu, iters), "us")
    metric("workload2/slice_cpu_with_gpu", timeit(slice_cpu, iters), "us")


def workload1(rows, batch, iters):
    dim, lr = 150, 0.001
    label = torch.full([batch, dim], 0.5, device="cuda")
    for where in ("table_cpu_rest_gpu", "all_gpu"):
        table_dev = "cpu" if where.startswith("table_cpu") else "cuda"
        emb = torch.nn.Embedding(rows, dim, sparse=True, device=table_dev)
        torch.nn.init.uniform_(emb.weight, -0.05, 0.05)
        opt = torch.optim.SGD(emb.parameters(), lr=lr)
        ids_list = [torch.randint(0, rows, (batch,), device=table_dev) for _ in range(16)]
        state = {"i": 0}

        def step():
            ids = ids_list[state["i"] % 16]
            state["i"] += 1
            e = emb(ids)
            if table_dev == "cpu":
                e = e.to("cuda", non_blocking=True)
            out = F.normalize(e, dim=-1)
            loss = ((out - label) ** 2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        metric(f"workload1/b{batch}/{where}", timeit(step, iters, warmup=5), "us")
        del emb, opt
        torch.cuda.empty_cache()


def dispatch(iters):
    x = torch.ones(1, device="cuda")

    def chain():
        h = x
        for _ in range(100):
            h = h * 1.0
        return h

    metric("dispatch/gpu", timeit(chain, iters) / 100, "us_per_op")
    static_in = torch.ones(1, device="cuda")
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            chain()
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        h = static_in
        for _ in range(100):
            h = h * 1.0
    metric("dispatch/gpu_graph", timeit(g.replay, iters) / 100, "us_per_op")
    xc = torch.ones(1)

    def chain_cpu():
        h = xc
        for _ in range(100):
            h = h * 1.0
        return h

    metric("dispatch/cpu", timeit(chain_cpu, iters, sync=False) / 100, "us_per_op")


def copies(quick):
    sizes = [16, 4096, 1 << 20, 256 << 20] if not quick else [16, 1 << 20]
    for n in sizes:
        for pinned in (True, False):
            host = torch.empty(n, dtype=torch.uint8, pin_memory=pinned)
            dev = torch.empty(n, dtype=torch.uint8, device="cuda")
            mem = "pinned" if pinned else "pageable"
            iters = 20 if n >= (64 << 20) else 200
            t = timeit(lambda: dev.copy_(host, non_blocking=False), iters)
            metric(f"copy/gpu_H2D_{mem}_sync/{n}", n / t / 1e3, "GB/s")
            t = timeit(lambda: host.copy_(dev, non_blocking=False), iters)
            metric(f"copy/gpu_D2H_{mem}_sync/{n}", n / t / 1e3, "GB/s")


def _mlp_step(name, iters, autocast, batch=4096, width=1024):
    """Times Tandem's mlp rows' model: 4 Linear(width) with ReLU between,
    mean squared error, plain SGD; the forward under torch.autocast(bfloat16)
    when `autocast` (the products in bfloat16, float32 master weights)."""
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1]).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(batch, width, device="cuda")
    y = torch.randn(batch, width, device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    t = timeit(step, iters, warmup=5)
    flops = 3 * 2 * batch * width * width * 4
    metric(f"{name}/4x1024_b4096_step", t, "us")
    metric(f"{name}/4x1024_b4096_tflops", flops / t / 1e6, "TFLOP/s")


def mlp(iters):
    # float32 as ours: no TF32 (PyTorch's default, stated so the rows cannot
    # silently change meaning).
    torch.backends.cuda.matmul.allow_tf32 = False
    _mlp_step("mlp", iters, autocast=False)


def mlp_bf16(iters):
    """Tandem's mlp_bf16 row (ApplyAmp bfloat16) against autocast."""
    _mlp_step("mlp_bf16", iters, autocast=True)


def sgemm_bf16(iters, m=4096, k=1024, n=1024):
    """sgemm() in bfloat16 (float32 accumulation, cuBLAS's default)."""
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    t = timeit(lambda: torch.mm(a, b, out=c), iters)
    metric(f"sgemm_bf16/{m}x{k}x{n}", t, "us")
    metric(f"sgemm_bf16/{m}x{k}x{n}_tflops", 2 * m * k * n / t / 1e6, "TFLOP/s")


def sgemm(iters, m=4096, k=1024, n=1024):
    """One float32 [m, k] x [k, n] product (TF32 off), as tandem_benchmark's
    sgemm row (one `mul` op): the cuBLAS reference of the mlp goal."""
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    c = torch.empty(m, n, device="cuda")
    t = timeit(lambda: torch.mm(a, b, out=c), iters)
    metric(f"sgemm/{m}x{k}x{n}", t, "us")
    metric(f"sgemm/{m}x{k}x{n}_tflops", 2 * m * k * n / t / 1e6, "TFLOP/s")


def embedding_cpu(rows, iters):
    """Tandem's embedding_cpu rows: 65536 random ids into a [rows, 150] CPU
    table, 16 threads (or all CPUs if fewer)."""
    torch.set_num_threads(min(16, os.cpu_count()))
    batch, dim, lr = 65536, 150, 0.001
    ids = torch.randint(0, rows, (batch,))

    # sparse_lookup_sgd_150d: the gather and the sparse SGD update alone, with
    # the output gradient given: weight[ids], then weight[ids[i]] -= lr *
    # grad[i] (index_add_ accumulates repeated ids, as the sparse gradient of
    # nn.Embedding(sparse=True) + optim.SGD does, without autograd's
    # bookkeeping).
    weight = torch.empty(rows, dim).uniform_(-0.05, 0.05)
    grad = torch.empty(batch, dim).uniform_(-1, 1)

    def lookup_sgd():
        out = weight[ids]
        weight.index_add_(0, ids, grad, alpha=-lr)
        return out

    t = timeit(lookup_sgd, iters, warmup=2, sync=False)
    metric("embedding_cpu/sparse_lookup_sgd_150d", batch / t * 1e6, "rows/s")
    del weight, grad

    # full_step_150d: the whole training step of the embedding workload.
    emb = torch.nn.Embedding(rows, dim, sparse=True)
    opt = torch.optim.SGD(emb.parameters(), lr=lr)

    def step():
        out = F.normalize(emb(ids), dim=-1)
        loss = ((out - 0.5) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    t = timeit(step, iters, warmup=2, sync=False)
    metric("embedding_cpu/full_step_150d", batch / t * 1e6, "rows/s")


def collectives(iters):
    """One all-reduce bucket of a single-rank NCCL group (torch.distributed,
    world size 1), synchronised per call as Tandem's Run is, against a
    device copy of the same size: tandem_benchmark's collective/ rows."""
    import torch.distributed as dist
    try:
        if not dist.is_initialized():
            dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29531",
                                    world_size=1, rank=0)
    except Exception as e:  # no NCCL in this torch build, port taken, ...
        print(f"# collectives skipped: {e}", flush=True)
        return
    for mib in (1, 25):
        x = torch.ones(mib * (1 << 20) // 4, device="cuda")
        y = torch.empty_like(x)

        def reduce():
            dist.all_reduce(x)
            torch.cuda.synchronize()

        def copy():
            y.copy_(x)
            torch.cuda.synchronize()

        reduce_us = timeit(reduce, iters)
        copy_us = timeit(copy, iters)
        metric(f"collective/gpu_allreduce_{mib}MiB", reduce_us, "us")
        print(f"# collective/gpu_allreduce_{mib}MiB: copy {copy_us:.4g} us, "
              f"added {reduce_us - copy_us:.4g} us", flush=True)
    dist.destroy_process_group()


def _two_gpu_rank(rank, iters, port):
    """Rank `rank` of a two-process NCCL job (torch.multiprocessing): the
    all-reduce bus bandwidth rows and the DDP MLP rows of 2 GPUs; rank 0
    prints them."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", world_size=2, rank=rank)
    for mib in (64, 256):
        x = torch.ones(mib * (1 << 20) // 4, device="cuda")

        def reduce():
            dist.all_reduce(x)
            torch.cuda.synchronize()

        t = timeit(reduce, max(iters // 10, 5))
        if rank == 0:
            # Bus bandwidth as NCCL's tests define it: algbw * 2 (n - 1) / n.
            metric(f"collective/gpu2_allreduce_{mib}MiB", t, "us")
            print(f"# collective/gpu2_allreduce_{mib}MiB: busbw {x.numel() * 4 / t / 1e3:.4g} GB/s",
                  flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    model = DDP(torch.nn.Sequential(*layers[:-1]).cuda(), device_ids=[rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(4096, 1024, device="cuda")
    y = torch.randn(4096, 1024, device="cuda")

    def step():
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    t = timeit(step, max(iters // 4, 5), warmup=5)
    if rank == 0:
        metric("data_parallel/mlp_gpux2/4x1024_b4096_per_replica", t, "us")
        print(f"# data_parallel/mlp_gpux2: {2 * 4096 / t * 1e6:.4g} examples/s", flush=True)
    dist.destroy_process_group()


def two_gpus(iters):
    """The 2-GPU rows (torch.distributed + NCCL, one process per GPU) and
    the 1-GPU DDP baseline they scale from; skipped with fewer GPUs."""
    if torch.cuda.device_count() < 2:
        print("# two-GPU rows skipped: fewer than 2 GPUs", flush=True)
        return
    import torch.multiprocessing as mp
    mp.spawn(_two_gpu_rank, args=(iters, 29533), nprocs=2, join=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--quick", action="store_true", help="few iterations (smoke run)")
    ap.add_argument("--only", default="",
                    help="comma-separated sections to run (workload2, dispatch, workload1, "
                         "copies, mlp, sgemm, mlp_bf16, sgemm_bf16, embedding_cpu, collectives, two_gpus); "
                         "default: all")
    args = ap.parse_args()
    it = 20 if args.quick else 200
    only = set(filter(None, args.only.split(",")))
    sections = [
        ("workload2", lambda: workload2(it * 5)),
        ("dispatch", lambda: dispatch(it)),
        ("workload1", lambda: (workload1(args.rows, 1, it), workload1(args.rows, 4096, it))),
        ("copies", lambda: copies(args.quick)),
        ("mlp", lambda: mlp(max(it // 4, 5))),
        ("sgemm", lambda: sgemm(it)),
        ("mlp_bf16", lambda: mlp_bf16(max(it // 4, 5))),
        ("sgemm_bf16", lambda: sgemm_bf16(it)),
        ("embedding_cpu", lambda: embedding_cpu(min(args.rows, 1_000_000), max(it // 20, 3))),
        ("collectives", lambda: collectives(it)),
        ("two_gpus", lambda: two_gpus(it)),
    ]
    unknown = only - {name for name, _ in sections}
    if unknown:
        ap.error(f"unknown sections: {', '.join(sorted(unknown))}")
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name(0)}", flush=True)
    for name, run in sections:
        if not only or name in only:
            run()


if __name__ == "__main__":
    main()
