#!/usr/bin/env python3
"""JAX versions of Tandem's benchmarks, jit-compiled as a JAX user would
write them. Prints `METRIC <name> <value> <unit>` lines like torch_bench.py.

  python3 jax_bench.py [--rows 10000000] [--quick]
"""
import argparse
import contextlib
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np


def timeit(fn, iters, warmup=10, repeats=5):
    for _ in range(warmup):
        jax.block_until_ready(fn())
    results = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = None
        for _ in range(iters):
            out = fn()
        jax.block_until_ready(out)
        results.append((time.perf_counter() - t0) / iters * 1e6)
    return statistics.median(results)


def metric(name, value, unit):
    print(f"METRIC {name} {value:.4g} {unit}", flush=True)


def workload2(iters):
    @jax.jit
    def crop():
        data1 = jnp.full((1, 3, 8, 8), 1.0)
        data2 = jnp.full((1, 3, 5, 5), 2.0)
        # Shapes are static under jit: slice and crop fold to constants.
        s = data2.shape[0:4]
        return jax.lax.slice(data1, (0, 0, 0, 0), s)

    metric("workload2/slice_gpu", timeit(crop, iters), "us")


def workload1(rows, batch, iters):
    dim, lr = 150, 0.001
    gpu = jax.devices("gpu")[0]
    cpu = jax.devices("cpu")[0]
    key = jax.random.PRNGKey(0)

    def loss_fn(emb, label):
        out = emb / jnp.maximum(jnp.linalg.norm(emb, axis=-1, keepdims=True), 1e-12)
        return jnp.mean((out - label) ** 2)

    label = jax.device_put(jnp.full((batch, dim), 0.5), gpu)
    ids_np = [np.random.randint(0, rows, size=batch) for _ in range(16)]

    # All on the GPU: gather, loss, sparse row update by scatter-add, donated table.
    table = jax.device_put(jax.random.uniform(key, (rows, dim), minval=-0.05, maxval=0.05), gpu)

    def step_gpu_fn(table, ids, label):
        emb = table[ids]
        g = jax.grad(loss_fn)(emb, label)
        return table.at[ids].add(-lr * g)

    step_gpu = jax.jit(step_gpu_fn, donate_argnums=0)
    ids_gpu = [jax.device_put(i, gpu) for i in ids_np]
    state = {"t": table, "i": 0}

    def run_gpu():
        state["t"] = step_gpu(state["t"], ids_gpu[state["i"] % 16], label)
        state["i"] += 1
        return state["t"]

    metric(f"workload1/b{batch}/all_gpu", timeit(run_gpu, iters, warmup=3), "us")
    del table, state
    # Table on the CPU: gather and update on the CPU, the rest on the GPU.
    host = np.random.default_rng(0).random((rows, dim), dtype=np.float32)
    host *= 0.1
    host -= 0.05
    table_c = jax.device_put(host, cpu)
    del host
    # jit runs where its (committed) inputs live: gather/update on the CPU.
    gather = jax.jit(lambda t, i: t[i])
    update = jax.jit(lambda t, i, g: t.at[i].add(-lr * g), donate_argnums=0)
    grad_gpu = jax.jit(jax.grad(loss_fn))
    ids_cpu = [jax.device_put(i, cpu) for i in ids_np]
    st = {"t": table_c, "i": 0}

    def run_mixed():
        ids = ids_cpu[st["i"] % 16]
        st["i"] += 1
        emb = jax.device_put(gather(st["t"], ids), gpu)
        g = jax.device_put(grad_gpu(emb, label), cpu)
        st["t"] = update(st["t"], ids, g)
        return st["t"]

    metric(f"workload1/b{batch}/table_cpu_rest_gpu", timeit(run_mixed, iters, warmup=3), "us")


def _mlp_step(name, iters, low, batch=4096, width=1024):
    """Tandem's mlp rows' model (4 dense layers of `width`, relu between,
    mean squared error, plain SGD), jit-compiled; with `low` the products in
    bfloat16 (float32 parameters cast at each use, as autocast and Tandem's
    ApplyAmp do; relu in bfloat16, the loss in float32)."""
    key = jax.random.PRNGKey(0)
    keys = jax.random.split(key, 8)
    params = [(jax.random.normal(keys[2 * i], (width, width)) * 0.02, jnp.zeros(width))
              for i in range(4)]
    x = jax.random.normal(keys[0], (batch, width))
    y = jax.random.normal(keys[1], (batch, width))
    cast = (lambda a: a.astype(jnp.bfloat16)) if low else (lambda a: a)

    def loss_fn(params):
        h = cast(x)
        for i, (w, b) in enumerate(params):
            h = h @ cast(w) + cast(b)
            if i < 3:
                h = jax.nn.relu(h)
        return jnp.mean((h.astype(jnp.float32) - y) ** 2)

    @jax.jit
    def step(params):
        g = jax.grad(loss_fn)(params)
        return jax.tree_util.tree_map(lambda p, d: p - 0.01 * d, params, g)

    st = {"p": params}

    def run():
        st["p"] = step(st["p"])
        return st["p"]

    # float32 products at float32 precision (no TF32); bfloat16 ones as they come.
    with contextlib.nullcontext() if low else jax.default_matmul_precision("float32"):
        t = timeit(run, iters, warmup=3)
    metric(f"{name}/4x1024_b4096_step", t, "us")
    metric(f"{name}/4x1024_b4096_tflops", 3 * 2 * batch * width * width * 4 / t / 1e6, "TFLOP/s")


def mlp(iters):
    _mlp_step("mlp", iters, low=False)


def mlp_bf16(iters):
    _mlp_step("mlp_bf16", iters, low=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    it = 20 if args.quick else 200
    print(f"# jax {jax.__version__}, {jax.devices()[0].device_kind}", flush=True)
    workload2(it * 5)
    workload1(args.rows, 4096, it)
    mlp(max(it // 4, 5))
    mlp_bf16(max(it // 4, 5))


if __name__ == "__main__":
    main()
