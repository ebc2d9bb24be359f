"""Tensors to and from numpy without copies, and DLPack exchange with numpy."""

import gc
import sys
import unittest

import numpy as np

import tandem
from tandem import layers as L
from testutil import build


def identity_program(shape=(4, 3), dtype="float32"):
    """A program fetching its fed x and y = 2 * x."""
    def b():
        x = tandem.data("x", list(shape), dtype)
        return [x, L.scale(x, 2.0)]
    return build(b)


class FeedFetchTest(unittest.TestCase):
    def setUp(self):
        self.main, self.startup, self.fetch = identity_program()
        self.exe = tandem.Executor(tandem.CPUPlace())

    def test_a_fed_array_is_used_in_place(self):
        x = np.arange(12, dtype=np.float32).reshape(4, 3)
        fed_back, y = self.exe.run(self.main, feed={"x": x}, fetch_list=self.fetch)
        # The fetched feed is the caller's memory: no copy in, no copy out.
        self.assertTrue(np.shares_memory(fed_back, x))
        self.assertEqual(fed_back.ctypes.data, x.ctypes.data)
        np.testing.assert_array_equal(y, 2 * x)

    def test_fetched_results_view_tandem_buffers(self):
        x = np.ones((4, 3), np.float32)
        _, y = self.exe.run(self.main, feed={"x": x}, fetch_list=self.fetch)
        self.assertFalse(y.flags.owndata)  # a view of a tandem.Tensor's buffer
        base = y
        while isinstance(base, np.ndarray) or isinstance(base, memoryview):
            base = base.base if isinstance(base, np.ndarray) else base.obj
        self.assertIsInstance(base, tandem.Tensor)
        self.assertEqual(y.ctypes.data, base.data_ptr())
        y[0, 0] = 7  # writable, and nobody else's
        _, y2 = self.exe.run(self.main, feed={"x": x}, fetch_list=self.fetch)
        self.assertEqual(y2[0, 0], 2)
        self.assertFalse(np.shares_memory(y, y2))

    def test_arrays_that_cannot_be_shared_are_copied(self):
        base = np.arange(24, dtype=np.float32).reshape(4, 6)
        strided = base[:, ::2]  # not C-contiguous
        fed_back, y = self.exe.run(self.main, feed={"x": strided}, fetch_list=self.fetch)
        self.assertFalse(np.shares_memory(fed_back, base))
        np.testing.assert_array_equal(fed_back, strided)
        raw = np.zeros(4 * 3 * 4 + 1, np.uint8)
        misaligned = raw[1:].view(np.float32).reshape(4, 3)  # address odd: copied
        misaligned[:] = 3
        fed_back, _ = self.exe.run(self.main, feed={"x": misaligned}, fetch_list=self.fetch)
        self.assertFalse(np.shares_memory(fed_back, raw))
        np.testing.assert_array_equal(fed_back, misaligned)

    def test_the_tensor_keeps_a_fed_array_alive(self):
        x = np.full((4, 3), 5, np.float32)
        refs = sys.getrefcount(x)
        fed_back, _ = self.exe.run(self.main, feed={"x": x}, fetch_list=self.fetch)
        self.assertGreater(sys.getrefcount(x), refs)  # held by the fetched view
        address = x.ctypes.data
        del x
        gc.collect()
        self.assertEqual(fed_back.ctypes.data, address)
        np.testing.assert_array_equal(fed_back, np.full((4, 3), 5, np.float32))
        del fed_back
        gc.collect()

    def test_persistable_fetches_are_copies(self):
        def b():
            w = L.create_parameter([3], "float32", name="w",
                                   default_initializer=tandem.initializer.Constant(1.0))
            return [w]
        main, startup, fetch = build(b)
        scope = tandem.Scope()
        self.exe.run(startup, scope=scope)
        w, = self.exe.run(main, fetch_list=fetch, scope=scope)
        w[:] = 9  # must not write the parameter
        np.testing.assert_array_equal(np.asarray(scope.find_var("w").get_tensor()), [1, 1, 1])

    def test_return_numpy_false_gives_tensors(self):
        x = np.ones((4, 3), np.float32)
        fed_back, y = self.exe.run(self.main, feed={"x": x}, fetch_list=self.fetch,
                                   return_numpy=False)
        self.assertIsInstance(y, tandem.Tensor)
        self.assertEqual((y.shape, y.dtype, str(y.place)), ([4, 3], "float32", "cpu"))
        self.assertEqual(fed_back.data_ptr(), x.ctypes.data)

    def test_every_dtype_round_trips_without_copies(self):
        for dtype, value in (("float32", 1.5), ("float64", 2.5), ("int32", 3), ("int64", 4),
                             ("bool", True), ("float16", -0.75)):
            with self.subTest(dtype=dtype):
                main, _, _ = build(lambda: tandem.data("v", [2], dtype))
                x = np.full(2, value, dtype)
                out, = self.exe.run(main, feed={"v": x}, fetch_list=["v"])
                self.assertEqual(out.dtype, np.dtype(dtype))
                self.assertTrue(np.shares_memory(out, x))


def has_ml_dtypes():
    try:
        import ml_dtypes  # noqa: F401
        return True
    except ImportError:
        return False


class LowPrecisionTest(unittest.TestCase):
    """bfloat16 and float16 tensors in programs, to and from numpy."""

    def setUp(self):
        self.exe = tandem.Executor(tandem.CPUPlace())

    def cast_program(self, dtype):
        def net():
            x = tandem.data("x", [4], "float32")
            return [L.cast(L.cast(x, dtype), "float32"), L.cast(x, dtype)]
        return build(net)

    def test_casts_round_to_nearest_even_and_overflow_to_inf(self):
        x = np.array([3.14159, 70000.0, 1.0 + 2.0 ** -8, -1e-9], np.float32)
        for dtype, want in (("bfloat16", [3.140625, 70144.0, 1.0, -1e-9]),
                            ("float16", [3.140625, np.inf, 1.00390625, -0.0])):
            with self.subTest(dtype=dtype):
                main, _, fetch = self.cast_program(dtype)
                back, low = self.exe.run(main, feed={"x": x}, fetch_list=fetch,
                                         return_numpy=False)
                self.assertEqual(low.dtype, dtype)
                got = back.numpy()
                if dtype == "bfloat16":  # -1e-9 keeps float32's exponent: 8 bits of it
                    self.assertAlmostEqual(got[3], -1e-9, delta=1e-11)
                    got, want = got[:3], want[:3]
                np.testing.assert_array_equal(got, np.array(want, np.float32))

    def test_float16_tensors_are_numpy_views(self):
        x = np.array([0.5, -2.0, 65504.0], np.float16)
        t = tandem.to_tensor(x)
        self.assertEqual(t.dtype, "float16")
        self.assertTrue(np.shares_memory(t.numpy(), x))
        self.assertTrue(np.shares_memory(np.from_dlpack(t), x))

    def test_bfloat16_feeds_from_lists_and_numpy_needs_ml_dtypes(self):
        main, _, _ = build(lambda: tandem.data("b", [3], "bfloat16"))
        fetched, = self.exe.run(main, feed={"b": [1.0, 3.14159, -70000.0]}, fetch_list=["b"],
                                return_numpy=False)
        self.assertEqual(fetched.dtype, "bfloat16")
        with self.assertRaisesRegex(BufferError, "bfloat16 tensor has no buffer format"):
            memoryview(fetched)
        if has_ml_dtypes():
            import ml_dtypes
            a = fetched.numpy()
            self.assertEqual(a.dtype, np.dtype(ml_dtypes.bfloat16))
            np.testing.assert_array_equal(a.astype(np.float32), [1.0, 3.140625, -70144.0])
            t = tandem.to_tensor(a)
            self.assertEqual(t.dtype, "bfloat16")
            np.testing.assert_array_equal(t.numpy().astype(np.float32), [1.0, 3.140625, -70144.0])
        else:
            with self.assertRaisesRegex(tandem.errors.Error, "ml_dtypes"):
                fetched.numpy()


class TensorTest(unittest.TestCase):
    def test_to_tensor_shares_and_numpy_views(self):
        x = np.arange(6, dtype=np.int64).reshape(2, 3)
        t = tandem.to_tensor(x)
        self.assertEqual(t.data_ptr(), x.ctypes.data)
        v = t.numpy()
        self.assertTrue(np.shares_memory(v, x))
        self.assertTrue(np.shares_memory(np.asarray(t), x))
        self.assertFalse(np.shares_memory(np.array(t), x))  # np.array copies, as for numpy
        self.assertEqual(repr(t), "Tensor(int64[2, 3], place=CPUPlace)")

    def test_device_tensors_copy_to_numpy_and_refuse_buffers(self):
        x = np.arange(4, dtype=np.float32)
        t = tandem.to_tensor(x, place=tandem.SimPlace(0))
        self.assertEqual(str(t.place), "sim:0")
        np.testing.assert_array_equal(t.numpy(), x)
        self.assertFalse(np.shares_memory(t.numpy(), x))
        with self.assertRaisesRegex(BufferError, "sim:0"):
            memoryview(t)
        np.testing.assert_array_equal(t.to(tandem.CPUPlace()).numpy(), x)

    def test_scope_variables(self):
        scope = tandem.Scope()
        var = scope.var("w")
        self.assertFalse(var.is_initialized())
        var.set(np.ones(3, np.float32), tandem.SimPlace(0))
        t = scope.find_var("w").get_tensor()
        self.assertEqual(str(t.place), "sim:0")
        t.set([4, 5, 6])  # keeps the variable's dtype and place
        got = scope.find_var("w").get_tensor()
        self.assertEqual((got.dtype, str(got.place)), ("float32", "sim:0"))
        np.testing.assert_array_equal(got.numpy(), [4, 5, 6])
        with self.assertRaisesRegex(ValueError, "float64 but float32"):
            var.set(np.ones(3))
        self.assertIsNone(scope.find_var("nope"))
        self.assertEqual(scope.names(), ["w"])


class DlpackTest(unittest.TestCase):
    def test_numpy_reads_tandem_tensors_without_copies(self):
        x = np.arange(6, dtype=np.float32).reshape(3, 2)
        t = tandem.to_tensor(x)
        self.assertEqual(t.__dlpack_device__(), (1, 0))  # kDLCPU
        y = np.from_dlpack(t)
        self.assertTrue(np.shares_memory(x, y))
        np.testing.assert_array_equal(y, x)

    def test_tandem_reads_numpy_without_copies(self):
        for dtype in ("float32", "float64", "int32", "int64"):
            with self.subTest(dtype=dtype):
                x = np.arange(6).astype(dtype).reshape(2, 3)
                t = tandem.from_dlpack(x)
                self.assertEqual((t.shape, t.dtype), ([2, 3], dtype))
                self.assertEqual(t.data_ptr(), x.ctypes.data)
                t2 = tandem.from_dlpack(x.__dlpack__())  # a capsule works too
                self.assertEqual(t2.data_ptr(), x.ctypes.data)

    def test_dlpack_tensors_feed_programs(self):
        main, _, fetch = identity_program()
        x = np.ones((4, 3), np.float32)
        t = tandem.from_dlpack(x)
        fed_back, y = tandem.Executor(tandem.CPUPlace()).run(main, feed={"x": t}, fetch_list=fetch)
        np.testing.assert_array_equal(y, 2 * x)
        # `t` still holds the fed buffer, so the fetched feed is a copy, not an alias of t.
        self.assertFalse(np.shares_memory(fed_back, x))
        np.testing.assert_array_equal(fed_back, x)

    def test_unsupported_dlpack_inputs(self):
        with self.assertRaisesRegex(ValueError, "no Tandem equivalent"):
            tandem.from_dlpack(np.zeros(3, np.uint8))
        with self.assertRaisesRegex(ValueError, "not row-major"):
            tandem.from_dlpack(np.zeros((3, 4), np.float32).T)
        with self.assertRaisesRegex(ValueError, "sim:0 has no DLPack device"):
            tandem.to_tensor(np.zeros(2, np.float32), place=tandem.SimPlace(0)).__dlpack__()
        with self.assertRaisesRegex(ValueError, "__dlpack__"):
            tandem.from_dlpack(object())


if __name__ == "__main__":
    unittest.main()
