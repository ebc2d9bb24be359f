"""Trains the GPT-style byte-level language model of //examples/gpt from Python
(models/gpt: token and position embeddings, pre-norm blocks of causal
self-attention and a tanh-GELU MLP, a final layer norm, a bias-free head) on a
text corpus, Debian's fortunes by default, on the GPU when there is one (else
the CPU); prints the training loss and, at the end, the validation loss and
perplexity.

    bazel run //examples/python:gpt -- --steps=300
    bazel run //examples/python:gpt -- --layers=2 --width=64 --heads=4 --seq=32 --place=cpu

It builds the C++ trainer's model (the same parameter names and seeds),
reads the corpus as it does (a directory's files in name order, no symbolic
links or "*.dat" files, the last --validation_fraction held out) and draws
the same training windows (SplitMix64 of (seed, step, row)), so on the CPU
its losses equal the C++ trainer's bit for bit
(examples_test), gradient clipping by global norm (--clip_norm, default 1)
included.
"""

import argparse
import math
import os

import numpy as np

import tandem
from tandem import layers
from common import MetricsLog, parse_place

VOCAB = 256
MASK64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def load_corpus(path, validation_fraction):
    """(bytes, split): the corpus and where its validation part starts."""
    if not os.path.exists(path):
        raise SystemExit("corpus: '%s' does not exist (apt-get install fortunes)" % path)
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path)
                       if not f.endswith(".dat") and not os.path.islink(os.path.join(path, f))
                       and os.path.isfile(os.path.join(path, f)))
    else:
        files = [path]
    text = b""
    for f in files:
        with open(f, "rb") as fh:
            data = fh.read()
        if b"\0" in data:
            raise SystemExit("corpus: '%s' is not text: a NUL byte at offset %d"
                             % (f, data.index(b"\0")))
        text += data
    if not text:
        raise SystemExit("corpus: '%s' holds no text" % path)
    return np.frombuffer(text, dtype=np.uint8), int(len(text) * (1 - validation_fraction))


def windows(text, starts, seq):
    """tokens [batch, seq] and targets [batch, seq, 1] (int64) of the windows at `starts`."""
    rows = np.stack([text[s:s + seq + 1] for s in starts]).astype(np.int64)
    return rows[:, :seq], rows[:, 1:, None]


def train_starts(split, seq, batch, step, seed):
    base = (seed * 1000003 + step) & MASK64
    return [splitmix64((base * 4096 + b) & MASK64) % (split - seq) for b in range(batch)]


def build_model(layers_, width, heads, seq, seed, clip_norm):
    """(main, startup, eval program, loss, optimizer) of models/gpt's model."""
    main_program, startup_program = tandem.Program(), tandem.Program()
    seeds = iter(range(seed * 1000 + 1, seed * 1000 + 100000))

    def normal(std):
        return tandem.initializer.Normal(0.0, std, seed=next(seeds))

    def linear(x, size, name, std=0.02, bias=True):
        return layers.fc(x, size, num_flatten_dims=2, name=name, bias_attr=None if bias else False,
                         param_attr=tandem.ParamAttr(initializer=normal(std)))

    with tandem.program_guard(main_program, startup_program):
        tokens = tandem.data(name="tokens", shape=[-1, seq], dtype="int64")
        targets = tandem.data(name="targets", shape=[-1, seq, 1], dtype="int64")
        x = layers.embedding(tokens, size=[VOCAB, width],
                             param_attr=tandem.ParamAttr(name="wte", initializer=normal(0.02)))
        wpe = layers.create_parameter([seq, width], "float32", name="wpe",
                                      default_initializer=normal(0.02))
        x = layers.elementwise_add(x, wpe, axis=1)
        residual_std = 0.02 / math.sqrt(2.0 * layers_)
        for i in range(layers_):
            name = "block%d" % i
            h = layers.layer_norm(x, begin_norm_axis=2, name=name + ".ln_1")
            h = layers.self_attention(linear(h, 3 * width, name + ".attn.qkv"), heads)
            x = layers.elementwise_add(x, linear(h, width, name + ".attn.proj", residual_std))
            h = layers.layer_norm(x, begin_norm_axis=2, name=name + ".ln_2")
            h = layers.gelu(linear(h, 4 * width, name + ".mlp.fc1"), approximate=True)
            x = layers.elementwise_add(x, linear(h, width, name + ".mlp.fc2", residual_std))
        x = layers.layer_norm(x, begin_norm_axis=2, name="ln_f")
        logits = linear(x, VOCAB, "lm_head", bias=False)
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, targets))
        eval_program = main_program.clone(for_test=True)
        clip = tandem.clip.GradientClipByGlobalNorm(clip_norm) if clip_norm > 0 else None
        optimizer = tandem.optimizer.Adam(learning_rate=1.0, grad_clip=clip)  # lr set below
        optimizer.minimize(loss)
    return main_program, startup_program, eval_program, loss, optimizer


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default="/usr/share/games/fortunes", help="text file or directory")
    p.add_argument("--validation_fraction", type=float, default=0.1)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--lr", type=float, default=1e-3, help="Adam's learning rate")
    p.add_argument("--eval_batches", type=int, default=8)
    p.add_argument("--log_every", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--place", default="", help="gpu:N, sim:N or cpu (default: gpu:0 if present)")
    p.add_argument("--eval_every", type=int, default=500, help="steps between validation runs")
    p.add_argument("--clip_norm", type=float, default=1.0,
                   help="clip the gradients by their global norm (0: no clipping)")
    p.add_argument("--metrics_out", default="", help="one JSON line per progress line and eval")
    p.add_argument("--recompute", choices=["none", "cheap", "cheap+weights"], default="none",
                   help="cheap: the layer norms' and gelus' outputs made again in the backward "
                        "(less device memory, the same losses); cheap+weights: the 16-bit "
                        "weight copies too")
    args = p.parse_args(argv)
    if args.clip_norm < 0:
        p.error("--clip_norm must be >= 0")
    if min(args.layers, args.width, args.heads, args.seq, args.batch_size, args.steps,
           args.eval_batches, args.log_every, args.seed) < 1 or args.width % args.heads:
        p.error("sizes, --steps, --eval_batches, --log_every and --seed must be >= 1, "
                "--width a multiple of --heads")
    text, split = load_corpus(args.corpus, args.validation_fraction)
    if min(split, len(text) - split) <= args.seq + 1:
        p.error("the corpus is too small for --seq %d" % args.seq)
    place = parse_place(args.place)
    main_program, startup_program, eval_program, loss, optimizer = build_model(
        args.layers, args.width, args.heads, args.seq, args.seed, args.clip_norm)
    if args.recompute != "none":
        tandem.recompute.apply(main_program, parameter_casts=args.recompute == "cheap+weights")
    print("gpt: %d layers x %d, %d heads, seq %d on %s, batch %d, %d train / %d validation bytes"
          % (args.layers, args.width, args.heads, args.seq, place, args.batch_size, split,
             len(text) - split), flush=True)
    exe = tandem.Executor(place)
    exe.run(startup_program)
    optimizer.set_lr(args.lr)
    metrics = MetricsLog(args.metrics_out)

    def validate(step):
        # Windows evenly spaced over the held-out part, as the C++ trainer's.
        room, count = len(text) - split - args.seq - 1, args.batch_size * args.eval_batches
        total = 0.0
        for i in range(args.eval_batches):
            starts = [split + room * (i * args.batch_size + b) // count
                      for b in range(args.batch_size)]
            tokens, targets = windows(text, starts, args.seq)
            value, = exe.run(eval_program, feed={"tokens": tokens, "targets": targets},
                             fetch_list=[loss])
            total += float(value[0])
        validation = total / args.eval_batches
        print("step %d  validation loss %.4f  perplexity %.3f  %.3f bits/byte"
              % (step, validation, math.exp(validation), validation / math.log(2)), flush=True)
        metrics.write("eval", step=step, validation_loss=validation,
                      perplexity=math.exp(validation))

    loss_sum = 0.0
    for step in range(1, args.steps + 1):
        tokens, targets = windows(text, train_starts(split, args.seq, args.batch_size, step - 1,
                                                     args.seed), args.seq)
        value, = exe.run(main_program, feed={"tokens": tokens, "targets": targets},
                         fetch_list=[loss])
        loss_sum += float(value[0])
        if step % args.log_every == 0:
            print("step %d/%d  loss %.4f" % (step, args.steps, loss_sum / args.log_every),
                  flush=True)
            metrics.write("train", step=step, loss=loss_sum / args.log_every)
            loss_sum = 0.0
        if step % args.eval_every == 0 or step == args.steps:
            validate(step)
    metrics.close()


if __name__ == "__main__":
    main()
