"""Optimizers against numpy, device_guard placement, profiler, checkpoints, options."""

import io
import os
import tempfile
import unittest

import numpy as np

import tandem
from tandem import layers as L
from testutil import PLACES, build, rand

X = rand(8, 3, seed=20)
T = rand(8, 1, seed=21)
W0 = rand(3, 1, seed=22)


def linear(optimizer):
    """loss = mean((x @ w - t)^2) with w = W0, minimized by `optimizer`."""
    def b():
        x, t = tandem.data("x", [8, 3]), tandem.data("t", [8, 1])
        w = L.create_parameter([3, 1], "float32", name="w")
        loss = L.mean(L.square_error_cost(L.matmul(x, w), t))
        optimizer.minimize(loss)
        return loss
    return build(b)


def grad(w):
    return 2 * X.T.astype(np.float64) @ (X @ w - T) / X.shape[0]


def train(optimizer, place, steps=3):
    main, startup, loss = linear(optimizer)
    exe, scope = tandem.Executor(tandem.Place(place)), tandem.Scope()
    exe.run(startup, scope=scope)
    scope.find_var("w").set(W0)
    losses = [exe.run(main, feed={"x": X, "t": T}, fetch_list=[loss], scope=scope)[0][0]
              for _ in range(steps)]
    return losses, scope.find_var("w").get_tensor().numpy()


class OptimizerTest(unittest.TestCase):
    def check(self, make, update, steps=3):
        w, state = W0.astype(np.float64), {}
        for _ in range(steps):
            w = update(w, grad(w), state)
        for place in PLACES:
            with self.subTest(place=place):
                losses, got = train(make(), place, steps)
                np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
                self.assertLess(losses[-1], losses[0])

    def test_sgd(self):
        self.check(lambda: tandem.optimizer.SGD(0.1), lambda w, g, s: w - 0.1 * g)

    def test_momentum(self):
        def update(w, g, s, mu=0.9, lr=0.05):
            s["v"] = mu * s.get("v", 0) + g
            return w - lr * (g + mu * s["v"])
        self.check(lambda: tandem.optimizer.Momentum(0.05, 0.9, use_nesterov=True), update)

    def test_adam(self):
        def update(w, g, s, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
            s["t"] = s.get("t", 0) + 1
            s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
            s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
            mhat, vhat = s["m"] / (1 - b1 ** s["t"]), s["v"] / (1 - b2 ** s["t"])
            return w - lr * mhat / (np.sqrt(vhat) + eps)
        self.check(lambda: tandem.optimizer.Adam(0.01), update)

    def test_sgd_with_gradient_clipping_by_global_norm(self):
        def update(w, g, s, lr=0.1, clip=0.05):
            return w - lr * g * min(1.0, clip / (np.sqrt((g * g).sum()) + 1e-6))
        self.check(lambda: tandem.optimizer.SGD(
            0.1, grad_clip=tandem.clip.GradientClipByGlobalNorm(0.05)), update)
        for place in PLACES:
            with self.subTest(place=place):
                opt = tandem.optimizer.Adam(0.01).enable_gradient_clipping(100.0)
                main, startup, loss = linear(opt)
                exe, scope = tandem.Executor(tandem.Place(place)), tandem.Scope()
                exe.run(startup, scope=scope)
                scope.find_var("w").set(W0)
                norm, = exe.run(main, feed={"x": X, "t": T}, fetch_list=[opt.global_norm_var],
                                scope=scope)
                np.testing.assert_allclose(norm[0], np.sqrt((grad(W0) ** 2).sum()), rtol=1e-5)
        with self.assertRaisesRegex(ValueError, "GradientClipByGlobalNorm is supported"):
            tandem.optimizer.Adam(0.01, grad_clip=1.0)

    def test_minimize_reports_and_set_lr(self):
        opt = tandem.optimizer.Adam(0.01)
        main, startup, loss = linear(opt)
        self.assertEqual(sorted(opt.state_vars("w")), ["beta1_pow", "beta2_pow", "moment1",
                                                       "moment2"])
        self.assertTrue(opt.learning_rate_var.persistable)
        scope = tandem.Scope()
        tandem.Executor(tandem.CPUPlace()).run(startup, scope=scope)
        opt.set_lr(0.5, scope)
        np.testing.assert_array_equal(
            scope.find_var(opt.learning_rate_var.name).get_tensor().numpy(), [0.5])
        with self.assertRaisesRegex(ValueError, "learning rate must be finite and > 0"):
            linear(tandem.optimizer.SGD(-1.0))


class PlacementTest(unittest.TestCase):
    def embedding(self, guard):
        def b():
            ids = tandem.data("ids", [4], "int64")
            label = L.fill_constant([4, 8], "float32", 0.5)
            with tandem.device_guard("cpu" if guard else None):
                emb = L.embedding(ids, size=[100, 8], is_sparse=True)
            loss = L.mean(L.square_error_cost(L.l2_normalize(emb, axis=-1), label))
            tandem.optimizer.SGD(0.001).minimize(loss)
            return loss
        return build(b)

    def test_guarded_table_stays_on_the_host(self):
        main, startup, loss = self.embedding(guard=True)
        exe = tandem.Executor(tandem.SimPlace(0))
        exe.run(startup)
        ids = np.array([1, 5, 9, 5], np.int64)
        exe.run(main, feed={"ids": ids}, fetch_list=[loss])
        table = {(e.op_type, e.cause): str(e.place) for e in exe.last_plan.placement_table}
        self.assertEqual(table[("lookup_table", "guard")], "cpu")
        self.assertEqual(table[("sgd", "param")], "cpu")
        self.assertEqual(table[("l2_normalize", "default")], "sim:0")
        stats = exe.last_run_stats
        self.assertEqual((stats.copies_h2d, stats.copies_d2h), (1, 1))
        self.assertEqual(stats.bytes_h2d, 4 * 8 * 4)  # the looked-up rows only
        self.assertEqual({c.var for c in stats.ledger},
                         {"lookup_table_0.tmp_0", "lookup_table_0.tmp_0@GRAD"})
        self.assertEqual(str(tandem.global_scope().find_var("embedding_0.tmp_0_w")
                             .get_tensor().place), "cpu")

    def test_cpu_and_sim_give_the_same_losses(self):
        main, startup, loss = self.embedding(guard=True)
        results = []
        for place in PLACES:
            exe, scope = tandem.Executor(tandem.Place(place)), tandem.Scope()
            exe.run(startup, scope=scope)
            results.append([exe.run(main, feed={"ids": np.array([1, 2, 3, 4])},
                                    fetch_list=[loss], scope=scope)[0][0] for _ in range(3)])
        self.assertEqual(results[0], results[1])

    def test_amp_trains_the_products_in_bfloat16_with_float32_weights(self):
        def net(amp):
            def b():
                x, t = tandem.data("x", [8, 3]), tandem.data("t", [8, 1])
                h = L.fc(x, 4, act="tanh", name="h")
                loss = L.mean(L.square_error_cost(L.fc(h, 1, name="o"), t))
                if amp:
                    self.assertEqual(tandem.amp.apply(dtype=amp), ["fc #0", "fc #2"])
                tandem.optimizer.SGD(0.1).minimize(loss)
                return loss
            return build(b)
        losses = {}
        for amp in (None, "bf16"):
            main, startup, loss = net(amp)
            exe, scope = tandem.Executor(tandem.CPUPlace()), tandem.Scope()
            exe.run(startup, scope=scope)
            losses[amp] = [float(exe.run(main, feed={"x": X, "t": T}, fetch_list=[loss],
                                         scope=scope)[0][0]) for _ in range(20)]
            self.assertEqual(scope.find_var("h.w_0").get_tensor().dtype, "float32")
        self.assertLess(losses["bf16"][-1], losses["bf16"][0])
        np.testing.assert_allclose(losses["bf16"], losses[None], rtol=0.03)
        self.assertNotEqual(losses["bf16"], losses[None])  # 16-bit rounding shows
        with self.assertRaisesRegex(tandem.errors.FailedPreconditionError, "before AppendBackward"):
            tandem.amp.apply(main)  # already has its backward ops
        with self.assertRaisesRegex(ValueError, "unknown data type 'fp8'"):
            tandem.amp.apply(tandem.Program(), "fp8")

    def test_recompute_gives_the_same_losses(self):
        def net(recompute):
            def b():
                x, t = tandem.data("x", [8, 3]), tandem.data("t", [8, 1])
                h = L.gelu(L.layer_norm(L.fc(x, 4, name="h"), name="ln"))
                loss = L.mean(L.square_error_cost(L.fc(h, 1, name="o"), t))
                tandem.optimizer.SGD(0.1).minimize(loss)
                if recompute:
                    values = tandem.recompute.apply()
                    self.assertEqual(len(values), 4)  # gelu and layer_norm outputs, statistics
                    self.assertIn("(gelu #", values[0])
                return loss
            return build(b)
        losses = {}
        for recompute in (False, True):
            main, startup, loss = net(recompute)
            exe, scope = tandem.Executor(tandem.SimPlace(0)), tandem.Scope()
            exe.run(startup, scope=scope)
            losses[recompute] = [float(exe.run(main, feed={"x": X, "t": T}, fetch_list=[loss],
                                               scope=scope)[0][0]) for _ in range(10)]
        self.assertEqual(losses[True], losses[False])
        self.assertLess(losses[True][-1], losses[True][0])
        with self.assertRaisesRegex(tandem.errors.FailedPreconditionError, "no backward op"):
            tandem.recompute.apply(tandem.Program())
        with self.assertRaisesRegex(tandem.errors.InvalidArgumentError,
                                    "'dropout' draws random numbers"):
            tandem.recompute.apply(main, ops=["dropout"])

    def test_float16_trains_with_dynamic_loss_scaling(self):
        opts = {}

        def b():
            x, t = tandem.data("x", [8, 3]), tandem.data("t", [8, 1])
            h = L.fc(x, 4, act="tanh", name="h")
            loss = L.mean(L.square_error_cost(L.fc(h, 1, name="o"), t))
            tandem.amp.apply(dtype="float16")
            opts["sgd"] = tandem.optimizer.SGD(0.1).enable_dynamic_loss_scaling(
                initial_scale=1024, growth_interval=5)
            updates, pairs = opts["sgd"].minimize(loss)
            self.assertEqual(sorted(op["type"] for op in updates), ["sgd"] * 4)
            return loss
        main, startup, loss = build(b)
        sgd = opts["sgd"]
        exe, scope = tandem.Executor(tandem.CPUPlace()), tandem.Scope()
        exe.run(startup, scope=scope)
        losses = [float(exe.run(main, feed={"x": X, "t": T}, fetch_list=[loss],
                                scope=scope)[0][0]) for _ in range(12)]
        self.assertLess(losses[-1], losses[0])
        names = {k: v.name for k, v in sgd.loss_scaling_vars.items()}
        self.assertEqual(sorted(names), ["good_steps", "scale", "step_skipped"])
        value = lambda k: scope.find_var(names[k]).get_tensor().numpy().tolist()
        self.assertEqual(value("scale"), [4096.0])  # grown twice, every 5 good steps
        self.assertEqual(value("good_steps"), [2])
        self.assertEqual(value("step_skipped"), [False])
        # The run reports them too.
        self.assertEqual(exe.last_run_stats.reports, {"loss_scaling": 4096.0, "step_skipped": 0.0})
        self.assertEqual(tandem.optimizer.Adam(0.1).enable_dynamic_loss_scaling()._scaling
                         ["initial_scale"], 65536.0)

    def test_transfer_policy_guard(self):
        def b():
            x = L.fill_constant([2], "float32", 1)
            with tandem.device_guard("cpu"), tandem.transfer_policy("disallow"):
                return L.relu(x)
        main, _, out = build(b)
        self.assertEqual(main.ops[-1]["transfer_policy"], "disallow")
        with self.assertRaisesRegex(tandem.FailedPreconditionError, "relu"):
            tandem.Executor(tandem.SimPlace(0)).run(main, fetch_list=[out])


class ProgramTest(unittest.TestCase):
    def test_clone_for_test_keeps_the_forward_ops(self):
        main, _, loss = linear(tandem.optimizer.SGD(0.1))
        test = main.clone(for_test=True)
        self.assertEqual({op["role"] for op in test.ops}, {"forward"})
        self.assertLess(test.num_ops, main.num_ops)
        self.assertEqual(main.clone().to_json(), main.to_json())
        self.assertEqual(tandem.Program.from_json(main.to_json()).to_json(), main.to_json())
        self.assertIn("sgd(", str(main))
        self.assertEqual([p.name for p in main.all_parameters()], ["w"])

    def test_the_plan_is_prepared_again_after_the_program_changes(self):
        main, startup = tandem.Program(), tandem.Program()
        exe = tandem.Executor(tandem.CPUPlace())
        with tandem.program_guard(main, startup):
            x = tandem.data("x", [2])
            y = L.scale(x, 2.0)
        a, = exe.run(main, feed={"x": np.ones(2, np.float32)}, fetch_list=[y])
        exe.run(main, feed={"x": np.ones(2, np.float32)}, fetch_list=[y])
        self.assertEqual(exe._exe.cache_size, 1)
        with tandem.program_guard(main, startup):
            z = L.scale(y, 3.0)
        b, = exe.run(main, feed={"x": np.ones(2, np.float32)}, fetch_list=[z])
        np.testing.assert_array_equal((a, b), ([2, 2], [6, 6]))
        self.assertEqual(exe._exe.cache_size, 1)  # the stale plan was dropped

    def test_default_programs_and_guards_restore(self):
        outer = tandem.default_main_program()
        main = tandem.Program()
        with tandem.program_guard(main):
            self.assertIs(tandem.default_main_program(), main)
            tandem.data("v", [1])
        self.assertIs(tandem.default_main_program(), outer)
        with self.assertRaises(TypeError):
            with tandem.program_guard("main"):
                pass


class OptimizerOffloadTest(unittest.TestCase):
    def test_offloaded_optimizer_trains_bit_for_bit_as_on_the_device(self):
        def net():
            def b():
                x, t = tandem.data("x", [8, 3]), tandem.data("t", [8, 1])
                h = L.fc(x, 4, act="tanh", name="h")
                loss = L.mean(L.square_error_cost(L.fc(h, 1, name="o"), t))
                tandem.amp.apply(dtype="bf16")
                tandem.optimizer.Adam(0.01).minimize(loss)
                return loss
            return build(b)
        losses, tables = {}, {}
        for offload in ("none", "optimizer", "auto"):
            main, startup, loss = net()
            exe = tandem.Executor(tandem.SimPlace(0), offload=offload)
            scope = tandem.Scope()
            exe.run(startup, scope=scope)
            losses[offload] = [float(exe.run(main, feed={"x": X, "t": T}, fetch_list=[loss],
                                             scope=scope)[0][0]) for _ in range(10)]
            tables[offload] = [(r.op_type, str(r.place)) for r in exe.last_plan.placement_table
                               if r.op_type == "adam"]
        self.assertEqual(losses["optimizer"], losses["none"])
        self.assertEqual(losses["auto"], losses["none"])
        self.assertEqual(tables["optimizer"], [("adam", "cpu")] * 4)
        self.assertEqual(tables["auto"], [("adam", "sim:0")] * 4)  # room to spare: none moves
        with self.assertRaisesRegex(tandem.errors.InvalidArgumentError,
                                    "offload must be 'none', 'optimizer' or 'auto', got 'all'"):
            tandem.Executor(tandem.SimPlace(0), offload="all")
        with self.assertRaisesRegex(tandem.errors.InvalidArgumentError,
                                    "offload_fraction needs offload='optimizer'"):
            tandem.Executor(tandem.SimPlace(0), offload_fraction=0.5)


class ExecutorOptionsTest(unittest.TestCase):
    def test_in_order_and_concurrent_runs_agree(self):
        results = []
        for options in ({}, {"in_order": True}, {"host_workers": 2}):
            main, startup, loss = linear(tandem.optimizer.Momentum(0.05, 0.9))
            exe, scope = tandem.Executor(tandem.SimPlace(0), **options), tandem.Scope()
            exe.run(startup, scope=scope)
            results.append([exe.run(main, feed={"x": X, "t": T}, fetch_list=[loss],
                                    scope=scope)[0][0] for _ in range(3)])
        self.assertEqual(results[0], results[1])
        self.assertEqual(results[0], results[2])
        self.assertIn("capture_graphs", tandem.EXECUTOR_OPTIONS)

    def test_the_schedule_trial_reports_its_choice_and_can_be_turned_off(self):
        losses, tables = {}, {}
        for trial in (True, False):
            main, startup, loss = linear(tandem.optimizer.Momentum(0.05, 0.9))
            exe = tandem.Executor(tandem.SimPlace(0), host_workers=2, schedule_trial=trial)
            scope = tandem.Scope()
            exe.run(startup, scope=scope)
            # 4 warm-up runs and 3 rounds of two 16-run phases, then one more.
            losses[trial] = [exe.run(main, feed={"x": X, "t": T}, fetch_list=[loss],
                                     scope=scope)[0][0] for _ in range(101)]
            tables[trial] = exe.last_plan.placement_table_string()
        self.assertEqual(losses[True], losses[False])  # the schedules agree bit for bit
        self.assertRegex(tables[True], r"schedule chosen by timing runs: (in order|concurrent): "
                                       r"[0-9.]+ vs [0-9.]+ ms per run")
        self.assertNotIn("schedule chosen", tables[False])
        self.assertIn("schedule_trial", tandem.EXECUTOR_OPTIONS)


class FusionTest(unittest.TestCase):
    def test_fuse_patterns_runs_the_loss_chain_as_one_op_and_trains_alike(self):
        def model():
            ids = tandem.data("ids", [16], dtype="int64")
            label = L.fill_constant([16, 8], "float32", 0.25)
            emb = L.embedding(ids, size=[50, 8], is_sparse=True,
                              param_attr=tandem.ParamAttr(name="emb_w"))
            loss = L.mean(L.square_error_cost(L.l2_normalize(emb, axis=-1), label))
            tandem.optimizer.SGD(0.5).minimize(loss)
            return loss
        ids = (np.arange(16, dtype=np.int64) * 7) % 50
        losses, types = {}, {}
        for fuse in (False, True):
            main, startup, loss = build(model)
            ops_before = [op["type"] for op in main.ops]
            exe = tandem.Executor(tandem.SimPlace(0), fuse_patterns=fuse)
            scope = tandem.Scope()
            exe.run(startup, scope=scope)
            losses[fuse] = [exe.run(main, feed={"ids": ids}, fetch_list=[loss],
                                    scope=scope)[0][0] for _ in range(5)]
            types[fuse] = [r.op_type for r in exe.last_plan.placement_table]
            self.assertEqual("fused at Prepare (fuse_patterns): 1 " in
                             exe.last_plan.placement_table_string(), fuse)
            self.assertEqual([op["type"] for op in main.ops], ops_before)
        self.assertIn("l2_normalize_square_error_mean", types[True])
        self.assertIn("l2_normalize_square_error_mean_grad", types[True])
        self.assertNotIn("l2_normalize", types[True])
        self.assertIn("l2_normalize", types[False])
        self.assertNotIn("l2_normalize_square_error_mean", types[False])
        self.assertLess(losses[False][-1], losses[False][0])  # it trains
        np.testing.assert_allclose(losses[True], losses[False], rtol=1e-6)
        self.assertIn("fuse_patterns", tandem.EXECUTOR_OPTIONS)


class ProfilerTest(unittest.TestCase):
    def test_report_ledger_and_advice_of_workload2(self):
        def b():
            d1 = L.fill_constant([1, 3, 8, 8], "float32", 0.5)
            d2 = L.fill_constant([1, 3, 5, 5], "float32", 0.5)
            s = L.slice(L.shape(d2), axes=[0], starts=[0], ends=[4])
            return L.crop_tensor(d1, shape=s)
        main, _, out = build(b)
        exe = tandem.Executor(tandem.SimPlace(0))
        report = io.StringIO()
        with tandem.profiler.profiler("All", "total", file=report) as prof:
            for _ in range(4):
                with tandem.profiler.record_event("step"):
                    exe.run(main, fetch_list=[out])
        text = report.getvalue()
        self.assertEqual(text, prof.profile.report)
        for section in ("Place: All", "GpuMemCpy Summary", "Event Summary", "Copy Ledger",
                        "Placement", "crop_tensor"):
            self.assertIn(section, text)
        self.assertEqual(prof.profile.steady_runs, 3)
        ledger = prof.profile.copy_ledger()
        self.assertEqual([(c["var"], c["consumer"], c["per_step"]) for c in ledger],
                         [("shape_0.tmp_0", "slice", 1.0), ("slice_0.tmp_0", "crop_tensor", 1.0)])
        self.assertIn('device_guard("cpu")', prof.profile.advice())
        self.assertIn("slice", prof.profile.advice())
        self.assertEqual(prof.profile.event_totals()["step"]["calls"], 3)
        self.assertFalse(tandem.profiler.is_profiler_enabled())

    def test_errors_inside_stop_the_session(self):
        with self.assertRaises(ZeroDivisionError):
            with tandem.profiler.profiler("CPU"):
                1 / 0
        self.assertFalse(tandem.profiler.is_profiler_enabled())
        with self.assertRaisesRegex(ValueError, "sort"):
            with tandem.profiler.profiler("CPU", "fastest"):
                pass
        tandem.profiler.reset_profiler()
        self.assertFalse(tandem.profiler.is_profiler_enabled())
        with self.assertRaisesRegex(ValueError, "state"):
            tandem.profiler.start_profiler("TPU")


class CheckpointTest(unittest.TestCase):
    def test_save_and_resume_continue_exactly(self):
        opt = tandem.optimizer.Adam(0.01)
        main, startup, loss = linear(opt)
        feed = {"x": X, "t": T}
        exe = tandem.Executor(tandem.CPUPlace())
        with tempfile.TemporaryDirectory() as d, tandem.scope_guard(tandem.Scope()):
            exe.run(startup)
            for _ in range(2):
                exe.run(main, feed=feed, fetch_list=[loss])
            tandem.io.save_persistables(exe, d, main)
            self.assertTrue(os.path.exists(os.path.join(d, "checkpoint")))
            expected = [exe.run(main, feed=feed, fetch_list=[loss])[0][0] for _ in range(2)]
            with tandem.scope_guard(tandem.Scope()):
                exe.run(startup)
                tandem.io.load_persistables(exe, d, main)
                resumed = [exe.run(main, feed=feed, fetch_list=[loss])[0][0] for _ in range(2)]
        self.assertEqual(expected, resumed)  # bitwise: Adam's moments came back too


if __name__ == "__main__":
    unittest.main()
