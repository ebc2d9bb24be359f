"""The Python examples train exactly what the C++ examples train: per-step losses
(and test accuracies) equal bit for bit on cpu, read from both programs'
--metrics_out files; the crop program's profile shows its copies go away."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.dirname(HERE)
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def run(cmd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), GLOG_minloglevel="1")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (cmd, done.returncode, done.stdout,
                                                        done.stderr))
    return done.stdout


def metrics(path, kind, key):
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    return [np.float32(r[key]) for r in rows if r["kind"] == kind]


class ExamplesTest(unittest.TestCase):
    def compare(self, name, args, kinds):
        with tempfile.TemporaryDirectory() as d:
            py, cc = os.path.join(d, "py.jsonl"), os.path.join(d, "cc.jsonl")
            run([sys.executable, os.path.join(HERE, name + ".py"), "--metrics_out=" + py] + args)
            run([os.path.join(EXAMPLES, name, name), "--metrics_out=" + cc] + args)
            for kind, key in kinds:
                ours, theirs = metrics(py, kind, key), metrics(cc, kind, key)
                self.assertGreater(len(theirs), 1)
                self.assertEqual(ours, theirs, "%s %s: Python vs C++" % (kind, key))

    def test_embedding_offload_losses_equal_the_cpp_example(self):
        for place in ("cpu", "sim:0"):
            for extra in ([], ["--is_sparse"], ["--no_guard"]):
                with self.subTest(place=place, extra=extra):
                    self.compare("embedding_offload", ["--place=" + place, "--rows=1000",
                                                       "--steps=6", "--log_every=1"] + extra,
                                 [("train", "loss"), ("train", "h2d_copies")])

    @unittest.skipUnless(os.path.isdir(FASHION_MNIST), "dataset-fashion-mnist is not installed")
    def test_fashion_mnist_losses_and_accuracy_equal_the_cpp_trainer(self):
        self.compare("fashion_mnist", ["--place=cpu", "--train_examples=640",
                                       "--test_examples=1000", "--epochs=2", "--log_every=1"],
                     [("train", "loss"), ("eval", "accuracy")])

    def test_gpt_losses_equal_the_cpp_trainer(self):
        with tempfile.TemporaryDirectory() as d:
            corpus = os.path.join(d, "corpus.txt")
            with open(corpus, "w") as f:
                for i in range(300):
                    f.write("Line %d: the quick brown fox jumps over the lazy dog.\n" % i)
            for place, extra in (("cpu", []), ("sim:0", []), ("sim:0", ["--recompute=cheap"])):
                with self.subTest(place=place, extra=extra):
                    self.compare("gpt", ["--place=" + place, "--corpus=" + corpus, "--layers=1",
                                         "--width=32", "--heads=2", "--seq=16",
                                         "--batch_size=4", "--steps=6", "--log_every=1",
                                         "--eval_every=3", "--eval_batches=2"] + extra,
                                 [("train", "loss"), ("eval", "validation_loss")])

    def test_crop_profile_before_and_after_the_guard(self):
        out = run([sys.executable, os.path.join(HERE, "crop_profile.py"), "--place=sim:0",
                   "--steps=20", "--warmup=2", "--advise"])
        self.assertEqual(out.count("Profiling Report"), 2)
        self.assertIn("slice on sim:0 : 1 H2D + 1 D2H copies per iteration (1 sync)", out)
        self.assertIn("slice on cpu   : 0 H2D + 0 D2H copies per iteration (0 sync)", out)
        self.assertIn("sync copies per step 1 -> 0", out)
        self.assertIn('device_guard("cpu")', out)


if __name__ == "__main__":
    unittest.main()
