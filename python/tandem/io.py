"""Checkpoints, IDX files and the DataLoader.

    tandem.io.save_persistables(exe, "/tmp/run", main)     # /tmp/run/checkpoint
    tandem.io.load_persistables(exe, "/tmp/run", main)

    train = tandem.io.fashion_mnist(train=True)            # Debian's dataset-fashion-mnist
    loader = tandem.io.DataLoader(train, batch_size=64, seed=1)
    for batch in loader:                                   # one epoch, reshuffled each time
        exe.run(main, feed=batch, fetch_list=[loss])       # {"image": ..., "label": ...}

Checkpoints are Tandem's format (framework/persistence/checkpoint.h: a CRC per
tensor, written atomically), the one the C++ trainers write: a checkpoint
saved here resumes there and back. A corrupted file raises DataLossError
(an IOError) naming the file, the offset and the tensor, and leaves the
scope untouched; a missing one NotFoundError.
"""

import os

from tandem import _C
from tandem.executor import global_scope
from tandem.framework import Variable, default_main_program

__all__ = ["save_checkpoint", "load_checkpoint", "save_persistables", "load_persistables",
           "read_idx", "fashion_mnist", "DataLoader", "DEFAULT_CHECKPOINT_NAME",
           "FASHION_MNIST_DIR"]

DEFAULT_CHECKPOINT_NAME = "checkpoint"
FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"


def save_checkpoint(path, program=None, scope=None, var_names=None):
    """Saves ``var_names`` (default: every persistable variable of ``program``, the
    default main program) from ``scope`` to the file ``path``."""
    if var_names is None:
        var_names = (program or default_main_program()).persistable_vars()
    names = [v.name if isinstance(v, Variable) else str(v) for v in var_names]
    _C.save_checkpoint(os.fspath(path), scope or global_scope(), names)


def load_checkpoint(path, scope=None, places=None):
    """Loads every tensor of the checkpoint file ``path`` into ``scope``, each on
    ``places[name]`` if given, else where it was saved from."""
    _C.load_checkpoint(os.fspath(path), scope or global_scope(), dict(places or {}))


def save_persistables(executor, dirname, main_program=None, filename=None):
    """Paddle's save_persistables: every persistable variable of ``main_program`` to
    ``dirname/filename`` (default "checkpoint", as the C++ trainers write)."""
    os.makedirs(dirname, exist_ok=True)
    save_checkpoint(os.path.join(dirname, filename or DEFAULT_CHECKPOINT_NAME), main_program)


def load_persistables(executor, dirname, main_program=None, filename=None):
    """Loads what save_persistables wrote. Variables are restored where they were
    saved from (a GPU run's parameters onto the GPU)."""
    load_checkpoint(os.path.join(dirname, filename or DEFAULT_CHECKPOINT_NAME))


def read_idx(path):
    """An IDX file (MNIST format, plain or gzip) as a numpy array of its type."""
    return _C.data.read_idx(os.fspath(path))


def fashion_mnist(data_dir=FASHION_MNIST_DIR, train=True, limit=0):
    """Fashion-MNIST's "train" or "t10k" split as DataLoader columns "image" (float32
    [n, 28, 28], pixels / 255) and "label" (int64 [n]); the first ``limit`` examples
    when limit > 0."""
    return _C.data.fashion_mnist_columns(os.fspath(data_dir), bool(train), int(limit))


class DataLoader:
    """Mini-batches of ``columns`` as {name: tandem.Tensor}, shuffled per epoch from
    ``seed`` (the same batches as the C++ DataLoader with that seed), prepared by a
    background thread. Iterating runs one epoch; the next iteration the next one.
    ``columns`` are consumed."""

    def __init__(self, columns, batch_size=64, shuffle=True, seed=0, drop_last=False,
                 prefetch=True):
        self._loader = _C.data.DataLoader(columns, int(batch_size), bool(shuffle), int(seed),
                                          bool(drop_last), bool(prefetch))

    @property
    def num_examples(self):
        return self._loader.num_examples

    @property
    def batches_per_epoch(self):
        return self._loader.batches_per_epoch

    def __len__(self):
        return self._loader.batches_per_epoch

    def next_batch(self):
        """The next batch, continuing into the next epoch at the end of one."""
        batch = self._loader.next()
        return batch if batch is not None else self._loader.next()

    def __iter__(self):
        while True:
            batch = self._loader.next()
            if batch is None:
                return
            yield batch
