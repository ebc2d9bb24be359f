"""Paddle 1.8 programs run unchanged with ``import tandem as fluid``: the four
programs of Paddle's device_guard tutorial ("运行时设备切换", PaddlePaddle/docs,
doc/fluid/advanced_guide/performance_improving/device_switching, its 1.8
text), as users write them, on cpu and sim:0 (and gpu:0 when there is one).

The program texts below are the tutorial's, line for line, except the import
lines (paddle.fluid -> tandem). Each runs as a whole with exec under a fresh
program_guard and scope_guard, so its default_main_program() and
default_startup_program() are its own; the one line a test changes is
``place = fluid.CUDAPlace(0)``, to the place under test. The embedding table
keeps the tutorial's 10,000,000 x 150 (5.6 GiB, and a dense gradient as
large: about 12 GiB resident, 10-30 s per run on 2 CPU cores; hence size
"large" and "exclusive" in BUILD).
"""

import contextlib
import gc
import io
import math
import unittest

import numpy as np

import tandem

EMBEDDING = """\
import tandem as fluid

data = fluid.layers.fill_constant(shape=[1], value=128, dtype='int64')
label = fluid.layers.fill_constant(shape=[1, 150], value=0.5, dtype='float32')
emb = fluid.embedding(input=data, size=(10000000, 150), dtype='float32')
out = fluid.layers.l2_normalize(x=emb, axis=-1)

cost = fluid.layers.square_error_cost(input=out, label=label)
avg_cost = fluid.layers.mean(cost)
sgd_optimizer = fluid.optimizer.SGD(learning_rate=0.001)
sgd_optimizer.minimize(avg_cost)

place = fluid.CUDAPlace(0)
exe = fluid.Executor(place)
exe.run(fluid.default_startup_program())
result = exe.run(fluid.default_main_program(), fetch_list=[avg_cost])
"""

EMBEDDING_ON_CPU = """\
import tandem as fluid

data = fluid.layers.fill_constant(shape=[1], value=128, dtype='int64')
label = fluid.layers.fill_constant(shape=[1, 150], value=0.5, dtype='float32')
with fluid.device_guard("cpu"):
    emb = fluid.embedding(input=data, size=(10000000, 150), dtype='float32')
out = fluid.layers.l2_normalize(x=emb, axis=-1)

cost = fluid.layers.square_error_cost(input=out, label=label)
avg_cost = fluid.layers.mean(cost)
sgd_optimizer = fluid.optimizer.SGD(learning_rate=0.001)
sgd_optimizer.minimize(avg_cost)

place = fluid.CUDAPlace(0)
exe = fluid.Executor(place)
exe.run(fluid.default_startup_program())
result = exe.run(fluid.default_main_program(), fetch_list=[avg_cost])
"""

CROP = """\
import tandem as fluid
import tandem.compiler as compiler
import tandem.profiler as profiler

data1 = fluid.layers.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype='float32')
data2 = fluid.layers.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype='float32')
shape = fluid.layers.shape(data2)
shape = fluid.layers.slice(shape, axes=[0], starts=[0], ends=[4])
out = fluid.layers.crop_tensor(data1, shape=shape)
place = fluid.CUDAPlace(0)
exe = fluid.Executor(place)
exe.run(fluid.default_startup_program())
compiled_prog = compiler.CompiledProgram(fluid.default_main_program())
with profiler.profiler('All', 'total') as prof:
    for i in range(10):
        result = exe.run(program=compiled_prog, fetch_list=[out])
"""

CROP_SLICE_ON_CPU = """\
import tandem as fluid
import tandem.compiler as compiler
import tandem.profiler as profiler

data1 = fluid.layers.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype='float32')
data2 = fluid.layers.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype='float32')
shape = fluid.layers.shape(data2)
with fluid.device_guard("cpu"):
    shape = fluid.layers.slice(shape, axes=[0], starts=[0], ends=[4])
out = fluid.layers.crop_tensor(data1, shape=shape)
place = fluid.CUDAPlace(0)
exe = fluid.Executor(place)
exe.run(fluid.default_startup_program())
compiled_prog = compiler.CompiledProgram(fluid.default_main_program())
with profiler.profiler('All', 'total') as prof:
    for i in range(10):
        result = exe.run(program=compiled_prog, fetch_list=[out])
"""

PLACES = ["cpu", "sim:0"] + (["gpu:0"] if tandem.is_compiled_with_cuda() else [])
EXTRA_STEPS = 2  # the tutorial runs one step; the test runs its last line twice more


@contextlib.contextmanager
def tutorial(text, place):
    """Runs ``text`` with its CUDAPlace(0) line on ``place``, in fresh default programs
    and a fresh global scope; yields (its variables, what it printed) inside them."""
    line = "place = fluid.CUDAPlace(0)\n"
    assert text.count(line) == 1
    if place != "gpu:0":
        text = text.replace(line, "place = fluid.Place(%r)\n" % place)
    namespace, printed = {}, io.StringIO()
    with tandem.program_guard(tandem.Program(), tandem.Program()), \
            tandem.scope_guard(tandem.Scope()):
        with contextlib.redirect_stdout(printed):
            exec(compile(text, "<tutorial on %s>" % place, "exec"), namespace)
        try:
            yield namespace, printed.getvalue()
        finally:
            namespace.clear()
            gc.collect()  # the 5.6 GiB table goes before the next run


class PaddleTutorialTest(unittest.TestCase):
    def losses(self, text, place):
        with tutorial(text, place) as (ns, _):
            fluid, exe, avg_cost = ns["fluid"], ns["exe"], ns["avg_cost"]
            losses = [ns["result"][0]]
            for _ in range(EXTRA_STEPS):
                losses.append(exe.run(fluid.default_main_program(), fetch_list=[avg_cost])[0])
            self.assertEqual(fluid.default_main_program().global_block().var(emb_table(ns))
                             .shape, (10000000, 150))
        return [float(l.item()) for l in losses]

    def test_embedding_programs_train_with_the_same_losses_everywhere(self):
        reference = None
        for text in (EMBEDDING, EMBEDDING_ON_CPU):
            for place in PLACES:
                with self.subTest(guarded=text is EMBEDDING_ON_CPU, place=place):
                    losses = self.losses(text, place)
                    self.assertTrue(all(math.isfinite(l) for l in losses), losses)
                    self.assertTrue(all(b < a for a, b in zip(losses, losses[1:])), losses)
                    if reference is None:
                        reference = losses
                    else:  # the same program, wherever its ops run: the same losses
                        self.assertEqual(losses, reference)

    def test_crop_programs_profile_and_lose_their_copies_under_the_guard(self):
        for text, guarded in ((CROP, False), (CROP_SLICE_ON_CPU, True)):
            for place in PLACES:
                with self.subTest(guarded=guarded, place=place):
                    with tutorial(text, place) as (ns, printed):
                        result, prof, exe = ns["result"], ns["prof"], ns["exe"]
                        np.testing.assert_array_equal(result[0], np.full((1, 3, 5, 5), 0.5,
                                                                         np.float32))
                        self.assertIn("Profiling Report", printed)
                        self.assertEqual(prof.profile.steady_runs, 9)  # 1 warm-up run
                        stats = exe.last_run_stats
                        copies = 0 if guarded or place == "cpu" else 1
                        self.assertEqual((stats.copies_h2d, stats.copies_d2h, stats.sync_copies),
                                         (copies, copies, copies), place)


def emb_table(ns):
    """The name of the tutorial's embedding table (its one parameter)."""
    params = ns["fluid"].default_main_program().all_parameters()
    assert len(params) == 1, params
    return params[0].name


class PaddleNamesTest(unittest.TestCase):
    """The Paddle 1.8 names the tutorial leans on, one by one."""

    def test_embedding_is_layers_embedding_with_paddles_signature(self):
        import inspect
        self.assertIs(tandem.embedding, tandem.layers.embedding)
        self.assertEqual(list(inspect.signature(tandem.embedding).parameters),
                         ["input", "size", "is_sparse", "is_distributed", "padding_idx",
                          "param_attr", "dtype"])

    def test_compiled_program_is_a_pass_through(self):
        import tandem.compiler as compiler
        main, startup = tandem.Program(), tandem.Program()
        with tandem.program_guard(main, startup):
            x = tandem.data(name="x", shape=[2, 3], dtype="float32")
            y = tandem.layers.scale(x, 2.0)
        compiled = compiler.CompiledProgram(main, build_strategy=compiler.BuildStrategy())
        self.assertIs(compiled.program, main)
        self.assertIs(compiled.with_data_parallel(loss_name=y.name,
                                                  exec_strategy=compiler.ExecutionStrategy()),
                      compiled)
        self.assertIs(compiled.with_inference_optimize(None), compiled)
        self.assertIs(compiler.CompiledProgram(compiled).program, main)
        exe = tandem.Executor(tandem.CPUPlace())
        x_value = np.arange(6, dtype=np.float32).reshape(2, 3)
        with tandem.scope_guard(tandem.Scope()):
            out, = exe.run(program=compiled, feed={"x": x_value}, fetch_list=[y])
            np.testing.assert_array_equal(out, 2 * x_value)
            self.assertEqual(exe.prepare(compiled, ["x"], [y]).fetch_names, [y.name])
        with self.assertRaises(TypeError):
            compiler.CompiledProgram("main")
        with self.assertRaises(TypeError):
            compiled.with_data_parallel(build_strategy="fuse_all")

    def test_profiler_takes_paddles_tracer_option(self):
        exe = tandem.Executor(tandem.CPUPlace())
        main, startup = tandem.Program(), tandem.Program()
        with tandem.program_guard(main, startup):
            out = tandem.layers.fill_constant(shape=[2], value=1.0, dtype="float32")
        report = io.StringIO()
        with tandem.profiler.profiler("All", "total", None, "OpDetail", file=report) as prof:
            for _ in range(3):
                exe.run(main, fetch_list=[out], scope=tandem.Scope())
        self.assertEqual(prof.profile.steady_runs, 2)
        with self.assertRaises(ValueError):
            with tandem.profiler.profiler("All", "total", tracer_option="Everything"):
                pass
        self.assertFalse(tandem.profiler.is_profiler_enabled())


if __name__ == "__main__":
    unittest.main()
