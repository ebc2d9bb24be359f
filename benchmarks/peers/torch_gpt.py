#!/usr/bin/env python3
"""The PyTorch peer of //examples/gpt: the same byte-level GPT (token and
position embeddings, pre-norm blocks of causal multi-head attention and a
tanh-GELU MLP, a final layer norm, a bias-free head), trained with Adam on
random byte windows, timed per step.

  python3 torch_gpt.py --layers 12 --width 768 --heads 12 --seq 512 --batch 8
  python3 torch_gpt.py ... --amp bf16            # torch.autocast(bfloat16)
  python3 torch_gpt.py ... --amp bf16 --offload  # Adam and fp32 weights on the CPU
  python3 torch_gpt.py ... --profile 3           # then the GPU kernels of 3 steps
  python3 torch_gpt.py ... --clip_norm 1         # clip by the global norm, as examples/gpt

--offload keeps the float32 master weights and Adam's state on the CPU
(pinned), moves each bf16 gradient down as the backward produces it
(a hook per parameter, non-blocking copies), steps a CPU Adam per parameter
once its gradient has landed, and copies the updated weights up before the
next step: the overlapped recipe of torchao's CPUOffloadOptimizer.
Prints `METRIC gpt/<shape>_b<batch>[_bf16][_offload]_step <us> us`, after a
comment line with the peak device memory over the timed steps.
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        h = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(h.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln_2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, layers, width, heads, seq, vocab=256):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Parameter(torch.randn(seq, width) * 0.02)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, tokens, targets):
        x = self.wte(tokens) + self.wpe
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


class CpuOffload:
    """fp32 master weights and Adam on the CPU; bf16 working weights on the GPU."""

    def __init__(self, model, lr):
        self.params = [p for p in model.parameters()]
        self.master = [p.detach().float().cpu().pin_memory() for p in self.params]
        for m in self.master:
            m.requires_grad_(True)
        self.grads = [torch.empty_like(m).pin_memory() for m in self.master]
        self.opt = [torch.optim.Adam([m], lr=lr, fused=False) for m in self.master]
        self.stream = torch.cuda.Stream()
        self.events = [None] * len(self.params)
        for i, p in enumerate(self.params):
            p.data = p.data.bfloat16()
            p.register_post_accumulate_grad_hook(self._hook(i))

    def _hook(self, i):
        def hook(p):
            self.stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.stream):
                self.grads[i].copy_(p.grad, non_blocking=True)
                self.events[i] = torch.cuda.Event()
                self.events[i].record()
            p.grad = None
        return hook

    def step(self):
        for i in reversed(range(len(self.params))):  # in the order gradients came
            self.events[i].synchronize()
            self.master[i].grad = self.grads[i]
            self.opt[i].step()
            self.params[i].data.copy_(self.master[i], non_blocking=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--amp", choices=["none", "bf16"], default="none")
    ap.add_argument("--offload", action="store_true")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--clip_norm", type=float, default=0,
                    help="clip the gradients by their global norm at this value before each "
                         "update (torch.nn.utils.clip_grad_norm_, foreach); 0: no clipping. "
                         "examples/gpt clips at 1 by default")
    ap.add_argument("--profile", type=int, default=0, metavar="STEPS",
                    help="after the timed steps, print the GPU kernels' total time per step "
                         "over STEPS more steps (torch.profiler), longest first")
    args = ap.parse_args()
    torch.manual_seed(1)
    dev = "cuda"
    model = Gpt(args.layers, args.width, args.heads, args.seq).to(dev)
    if args.offload:
        if args.amp != "bf16":
            raise SystemExit("--offload needs --amp bf16")
        if args.clip_norm > 0:
            raise SystemExit("--clip_norm is not offered with --offload (its hooks step each "
                             "parameter as its gradient lands)")
        offload = CpuOffload(model, 1e-3)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    tokens = torch.randint(0, 256, (args.batch, args.seq), device=dev)
    targets = torch.randint(0, 256, (args.batch, args.seq), device=dev)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp == "bf16"):
            loss = model(tokens, targets)
        loss.backward()
        if args.offload:
            offload.step()
        else:
            if args.clip_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_norm, foreach=True)
            opt.step()
            opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e6)
    name = f"gpt/{args.layers}x{args.width}_s{args.seq}_b{args.batch}"
    name += "_bf16" if args.amp == "bf16" else ""
    name += "_offload" if args.offload else ""
    name += f"_clip{args.clip_norm:g}" if args.clip_norm > 0 else ""
    params = sum(p.numel() for p in model.parameters())
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, {params / 1e6:.1f} M "
          f"parameters", flush=True)
    # A comment line: the scripts read the METRIC line's figure alone.
    print(f"# peak device memory {torch.cuda.max_memory_allocated()} bytes "
          f"(torch.cuda.max_memory_allocated over the timed steps)", flush=True)
    print(f"METRIC {name}_step {statistics.median(times):.4g} us", flush=True)
    if args.profile > 0:
        print_kernel_profile(step, args.profile)


def print_kernel_profile(step, steps):
    """The GPU kernels of `steps` steps, summed by name, per step, longest first."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    rows = [(e.device_time_total / steps, e.count / steps, e.key) for e in prof.key_averages()
            if e.device_time_total > 0]
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"# GPU kernel time per step: {total / 1e3:.2f} ms over {len(rows)} kernels", flush=True)
    for us, count, key in rows[:40]:
        print(f"#   {us / 1e3:8.3f} ms  {count:6.1f}x  {key[:110]}", flush=True)


if __name__ == "__main__":
    main()
