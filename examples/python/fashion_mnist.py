"""Trains the Fashion-MNIST MLP (784 -> 256 -> 128 -> 10, relu) from Python, with
Debian's dataset-fashion-mnist read by Tandem's IDX loader and DataLoader, on
the GPU when there is one (else the CPU); prints progress lines and the test
accuracy of every epoch (about 0.89 after 15 epochs).

    bazel run //examples/python:fashion_mnist
    bazel run //examples/python:fashion_mnist -- --first_layer_on_cpu --place=sim:0
    bazel run //examples/python:fashion_mnist -- --epochs=1 --train_examples=6400

It builds the C++ trainer's model (//examples/fashion_mnist, models/fashion_mnist:
parameters "layer<i>", Xavier-uniform from --seed, Adam with the learning
rate decayed by --lr_decay after every epoch) and feeds it the same batches,
so on the CPU its losses and accuracies equal the C++ trainer's, bit for bit.
"""

import argparse
import sys
import time

import tandem
from tandem import layers
from common import MetricsLog, copies, parse_place

CLASSES = 10


def build_model(hidden, first_layer_on_cpu, seed, amp="none"):
    """(main, startup, eval program, image, label, loss, correct, total, optimizer)."""
    main_program, startup_program = tandem.Program(), tandem.Program()
    with tandem.program_guard(main_program, startup_program):
        image = tandem.data(name="image", shape=[-1, 28, 28], dtype="float32")
        label = tandem.data(name="label", shape=[-1], dtype="int64")

        def fc(x, size, layer, act=None):
            init = tandem.initializer.Xavier(seed=seed * 1000 + layer)
            return layers.fc(x, size, param_attr=tandem.ParamAttr(initializer=init), act=act,
                             name="layer%d" % layer)

        with tandem.device_guard("cpu" if first_layer_on_cpu else None):
            h = fc(image, hidden[0], 0, act="relu")
        for layer, size in enumerate(hidden[1:], start=1):
            h = fc(h, size, layer, act="relu")
        logits = fc(h, CLASSES, len(hidden))
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, label))
        _, correct, total = layers.accuracy(logits, label, k=1, return_counts=True)
        if amp != "none":  # the fc layers in 16 bits, float32 master weights
            tandem.amp.apply(main_program, amp)
        eval_program = main_program.clone(for_test=True)  # before minimize: forward only
        optimizer = tandem.optimizer.Adam(learning_rate=1.0)  # set per epoch below
        optimizer.minimize(loss)
    return main_program, startup_program, eval_program, loss, correct, total, optimizer


def test_accuracy(exe, eval_program, correct, total, loader):
    right = seen = 0
    for batch in loader:
        c, t = exe.run(eval_program, feed=batch, fetch_list=[correct, total])
        right, seen = right + int(c[0]), seen + int(t[0])
    return right / seen if seen else 0.0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hidden", default="256,128", help="hidden fc sizes, comma-separated")
    p.add_argument("--epochs", type=int, default=15, help="passes over the training set")
    p.add_argument("--batch_size", type=int, default=64, help="training examples per step")
    p.add_argument("--lr", type=float, default=0.001, help="learning rate of the first epoch")
    p.add_argument("--lr_decay", type=float, default=0.8, help="lr multiplier after each epoch")
    p.add_argument("--place", default="", help="gpu:N, sim:N or cpu (default: gpu:0 if present)")
    p.add_argument("--first_layer_on_cpu", action="store_true",
                   help='put the first layer under device_guard("cpu")')
    p.add_argument("--seed", type=int, default=1, help="parameters and shuffling")
    p.add_argument("--amp", default="none", choices=["none", "bf16", "fp16"],
                   help="mixed precision: the fc layers in bfloat16 or float16")
    p.add_argument("--data_dir", default=tandem.io.FASHION_MNIST_DIR,
                   help="directory of the gzipped IDX files")
    p.add_argument("--train_examples", type=int, default=0, help="first N training examples")
    p.add_argument("--test_examples", type=int, default=0, help="first N test examples")
    p.add_argument("--max_steps", type=int, default=0, help="stop after N steps (0: no limit)")
    p.add_argument("--log_every", type=int, default=100, help="progress line every N steps")
    p.add_argument("--checkpoint_dir", default="", help="save a checkpoint here every epoch")
    p.add_argument("--metrics_out", default="", help="one JSON line per progress line / epoch")
    args = p.parse_args(argv)
    hidden = [int(s) for s in args.hidden.split(",")]
    if (args.epochs < 1 or args.batch_size < 1 or args.log_every < 1 or args.max_steps < 0
            or not 0 < args.lr_decay <= 1 or min(hidden) < 1 or args.seed < 1):
        p.error("--epochs, --batch_size, --log_every, --seed and hidden sizes must be >= 1, "
                "--max_steps >= 0 and --lr_decay in (0, 1]")
    place = parse_place(args.place)
    main_program, startup_program, eval_program, loss, correct, total, optimizer = build_model(
        hidden, args.first_layer_on_cpu, args.seed, args.amp)

    train = tandem.io.DataLoader(tandem.io.fashion_mnist(args.data_dir, True, args.train_examples),
                                 batch_size=args.batch_size, seed=args.seed)
    test = tandem.io.DataLoader(tandem.io.fashion_mnist(args.data_dir, False, args.test_examples),
                                batch_size=1000, shuffle=False)
    print("fashion_mnist: mlp [%s] on %s%s, adam lr %g, batch %d, %d train / %d test examples"
          % (", ".join(map(str, hidden)), place,
             " (first layer on cpu)" if args.first_layer_on_cpu else "", args.lr,
             args.batch_size, train.num_examples, test.num_examples), flush=True)

    exe = tandem.Executor(place)
    exe.run(startup_program)
    per_epoch = train.batches_per_epoch
    last_step = args.epochs * per_epoch
    if args.max_steps:
        last_step = min(last_step, args.max_steps)
    metrics = MetricsLog(args.metrics_out)
    step, loss_sum, loss_count, accuracy = 0, 0.0, 0, None
    clock = time.perf_counter()
    while step < last_step:
        epoch = step // per_epoch + 1
        if step % per_epoch == 0:
            optimizer.set_lr(args.lr * args.lr_decay ** (epoch - 1))
        batch = train.next_batch()
        value, = exe.run(main_program, feed=batch, fetch_list=[loss])
        loss_sum += float(value[0])
        loss_count += 1
        step += 1
        in_epoch = (step - 1) % per_epoch + 1
        if step % args.log_every == 0:
            print("epoch %d/%d  step %d/%d  loss %.4f" % (epoch, args.epochs, in_epoch,
                                                           per_epoch, loss_sum / loss_count),
                  flush=True)
            metrics.write("train", step=step, epoch=epoch, loss=loss_sum / loss_count,
                          **copies(exe.last_run_stats))
            loss_sum, loss_count = 0.0, 0
        if in_epoch < per_epoch and step < last_step:
            continue
        seconds = time.perf_counter() - clock
        accuracy = test_accuracy(exe, eval_program, correct, total, test)
        print("epoch %d/%d  %s  test accuracy %.4f  (train %.2f s)" % (
            epoch, args.epochs, "done" if in_epoch == per_epoch else "stopped at batch %d" % in_epoch,
            accuracy, seconds), flush=True)
        metrics.write("eval", step=step, epoch=epoch, accuracy=accuracy)
        if args.checkpoint_dir:
            tandem.io.save_persistables(exe, args.checkpoint_dir, main_program)
            print("saved %s/checkpoint (step %d)" % (args.checkpoint_dir, step))
        clock = time.perf_counter()
    metrics.close()
    if accuracy is not None:
        print("final test accuracy %.4f after %d steps" % (accuracy, step))
    return 0


if __name__ == "__main__":
    sys.exit(main())
