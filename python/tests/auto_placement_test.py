"""Automatic placement from Python: the Executor's auto_placement and memory_budget_mb
options, the placement table's causes, reasons and copies, the memory estimate, and the
errors bad options raise."""

import unittest

import numpy as np

import tandem
from tandem import layers as L
from testutil import build

SIM = tandem.SimPlace(0)


def crop(slice_device=None):
    """Workload 2: crop_tensor(data1, shape(data2)[0:4]); the slice under
    device_guard(slice_device) when given."""
    def b():
        data1 = L.fill_constant([1, 3, 8, 8], "float32", 1.0)
        data2 = L.fill_constant([1, 3, 5, 5], "float32", 2.0)
        shape = L.shape(data2)
        if slice_device:
            with tandem.device_guard(slice_device):
                shape = L.slice(shape, axes=[0], starts=[0], ends=[4])
        else:
            shape = L.slice(shape, axes=[0], starts=[0], ends=[4])
        return L.crop_tensor(data1, shape=shape)
    return build(b)


def embedding(table_device=None):
    """Workload 1, small: a 100000 x 16 sparse table (6.1 MiB), l2_normalize, SGD."""
    def b():
        ids = tandem.data("ids", [32], dtype="int64")
        label = L.fill_constant([32, 16], "float32", 0.5)
        if table_device:
            with tandem.device_guard(table_device):
                emb = L.embedding(ids, size=[100000, 16], is_sparse=True,
                                  param_attr=tandem.ParamAttr(name="emb_w"))
        else:
            emb = L.embedding(ids, size=[100000, 16], is_sparse=True,
                              param_attr=tandem.ParamAttr(name="emb_w"))
        loss = L.mean(L.square_error_cost(L.l2_normalize(emb, axis=-1), label))
        tandem.optimizer.SGD(1.0).minimize(loss)
        return loss
    return build(b)


IDS = (np.arange(32, dtype=np.int64) * 131) % 1000


def rows(plan, op_type):
    return [r for r in plan.placement_table if r.op_type == op_type]


def auto(**options):
    return tandem.Executor(SIM, auto_placement=True, cost_cache_dir="", **options)


class AutoPlacementTest(unittest.TestCase):
    def test_options_are_listed(self):
        for name in ("auto_placement", "memory_budget_mb", "auto_moves_persistables",
                     "cost_cache_dir", "measure_costs", "feed_shapes"):
            self.assertIn(name, tandem.EXECUTOR_OPTIONS)

    def test_workload2_keeps_the_shape_arithmetic_on_the_host(self):
        main, startup, out = crop()
        exe = auto()
        plan = exe.prepare(main, [], [out])
        self.assertEqual(plan.num_copies, 0, plan)
        (slice_row,) = rows(plan, "slice")
        self.assertEqual(str(slice_row.place), "cpu")
        self.assertEqual(slice_row.cause, "auto")
        self.assertIn("on cpu est. ", slice_row.detail)
        self.assertIn("(0 copies)", slice_row.detail)
        self.assertIsNone(slice_row.copy)
        self.assertEqual(str(rows(plan, "crop_tensor")[0].place), "sim:0")
        self.assertIn("auto placement on sim:0 (no memory budget)", plan.auto_summary)
        self.assertIn("0 copies per step", plan.auto_summary)
        self.assertGreater(plan.estimated_step_us, 0)
        manual_main, _, manual_out = crop(slice_device="cpu")
        expected, = tandem.Executor(SIM).run(manual_main, fetch_list=[manual_out])
        got, = exe.run(main, fetch_list=[out])
        np.testing.assert_array_equal(got, expected)
        self.assertEqual(exe.last_run_stats.copies, 0)

    def test_without_auto_placement_the_copies_are_typed(self):
        main, _, out = crop(slice_device="sim:0")
        plan = tandem.Executor(SIM).prepare(main, [], [out])
        self.assertEqual(plan.auto_summary, "")
        copies = [r for r in plan.placement_table if r.copy is not None]
        self.assertEqual(len(copies), 2)
        up, down = copies
        self.assertEqual((str(up.copy.from_place), str(up.copy.to_place)), ("cpu", "sim:0"))
        self.assertEqual(up.copy.consumer_type, "slice")
        self.assertEqual(up.cause, "copy")
        self.assertEqual((str(down.copy.from_place), str(down.copy.to_place)), ("sim:0", "cpu"))
        self.assertEqual(down.copy.consumer_type, "crop_tensor")
        self.assertEqual(down.copy.consumer_arg, "Shape")
        self.assertEqual(down.cause, "host-arg")
        consumer = plan.placement_table[down.copy.consumer]
        self.assertEqual(consumer.op_type, "crop_tensor")

    def test_a_table_over_the_budget_goes_to_the_cpu_with_its_gradient_and_update(self):
        main, startup, loss = embedding()
        exe, scope = auto(memory_budget_mb=4), tandem.Scope()
        exe.run(startup, scope=scope)
        plan = exe.prepare(main, ["ids"], [loss], scope=scope)
        for op_type in ("lookup_table", "lookup_table_grad", "sgd"):
            (row,) = [r for r in rows(plan, op_type) if op_type != "sgd" or "emb_w" in r.detail]
            self.assertEqual(str(row.place), "cpu", plan)
        (lookup,) = rows(plan, "lookup_table")
        self.assertEqual(lookup.cause, "auto")
        self.assertIn("'emb_w' 6.1 MiB does not fit the 4.0 MiB budget of sim:0", lookup.detail)
        self.assertIn("budget 4.0 MiB, est. peak", plan.auto_summary)
        self.assertEqual(str(rows(plan, "l2_normalize")[0].place), "sim:0")
        (sim,) = [m for m in plan.memory_estimate if str(m.place) == "sim:0"]
        self.assertLessEqual(sim.pipelined_peak_bytes, 4 << 20)
        self.assertGreaterEqual(sim.pipelined_peak_bytes, sim.peak_bytes)
        (cpu,) = [m for m in plan.memory_estimate if str(m.place) == "cpu"]
        self.assertEqual(cpu.largest[0], ("emb_w", 100000 * 16 * 4))
        self.assertGreaterEqual(cpu.parameters, 100000 * 16 * 4)
        # Trains with the losses of the table placed on the cpu by hand.
        hand_main, hand_startup, hand_loss = embedding(table_device="cpu")
        hand, hand_scope = tandem.Executor(SIM), tandem.Scope()
        hand.run(hand_startup, scope=hand_scope)
        for _ in range(5):
            got, = exe.run(main, feed={"ids": IDS}, fetch_list=[loss], scope=scope)
            want, = hand.run(hand_main, feed={"ids": IDS}, fetch_list=[hand_loss],
                             scope=hand_scope)
            self.assertEqual(got.tolist(), want.tolist())

    def test_a_budget_that_fits_leaves_the_table_on_the_device(self):
        main, startup, loss = embedding()
        exe, scope = auto(memory_budget_mb=64), tandem.Scope()
        exe.run(startup, scope=scope)
        plan = exe.prepare(main, ["ids"], [loss], scope=scope)
        self.assertEqual(str(rows(plan, "lookup_table")[0].place), "sim:0", plan)
        self.assertIn("budget 64.0 MiB", plan.auto_summary)

    def test_bad_budgets_are_refused_naming_the_value(self):
        main, _, out = crop()
        for bad, message in ((-1, "memory_budget_mb -1 is not a size"),
                             (float("nan"), "memory_budget_mb nan is not a size"),
                             (2 ** 40, "more than 1 PiB"),
                             ("big", "option 'memory_budget_mb' cannot be 'big'"),
                             (True, "option 'memory_budget_mb' cannot be True")):
            with self.subTest(bad=bad):
                with self.assertRaisesRegex(tandem.InvalidArgumentError, message):
                    tandem.Executor(SIM, auto_placement=True, memory_budget_mb=bad)
        with self.assertRaisesRegex(tandem.InvalidArgumentError,
                                    "option 'auto_placement' cannot be 'yes'"):
            tandem.Executor(SIM, auto_placement="yes")

    def test_a_budget_below_what_pinned_ops_keep_on_the_device_is_exhausted(self):
        main, startup, loss = embedding(table_device="sim:0")
        scope = tandem.Scope()
        tandem.Executor(SIM).run(startup, scope=scope)
        with self.assertRaisesRegex(tandem.ResourceExhaustedError,
                                    r"does not fit the memory budget of sim:0, 1048576 bytes"
                                    r"(.|\n)*memory_budget_mb=7(.|\n)*'emb_w' 6.1 MiB"):
            auto(memory_budget_mb=1).prepare(main, ["ids"], [loss], scope=scope)

    def test_feed_shapes_size_the_estimate(self):
        def b():
            x = tandem.data("x", [-1, 8])
            return L.scale(x, 2.0)
        main, _, out = build(b)
        exe = tandem.Executor(tandem.CPUPlace(), feed_shapes={"x": [64, 8]})
        (cpu,) = exe.prepare(main, ["x"], [out]).memory_estimate
        self.assertEqual(cpu.peak_bytes, 2 * 64 * 8 * 4)  # x and its scaled copy
        self.assertEqual(cpu.feeds, 64 * 8 * 4)


if __name__ == "__main__":
    unittest.main()
