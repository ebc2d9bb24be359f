"""Status codes become the documented Python exceptions; bad feeds raise clearly."""

import os
import tempfile
import unittest

import numpy as np

import tandem
from tandem import _C
from tandem import layers as L
from testutil import build

# Before any sim device exists: sim devices of this process hold 1 MiB.
tandem.set_flags({"sim_memory_limit_mb": 1})

MAPPING = {
    "INVALID_ARGUMENT": (tandem.InvalidArgumentError, ValueError),
    "NOT_FOUND": (tandem.NotFoundError, LookupError),
    "RESOURCE_EXHAUSTED": (tandem.ResourceExhaustedError, MemoryError),
    "DATA_LOSS": (tandem.DataLossError, IOError),
    "OUT_OF_RANGE": (tandem.OutOfRangeError, IndexError),
    "UNIMPLEMENTED": (tandem.UnimplementedError, NotImplementedError),
    "FAILED_PRECONDITION": (tandem.FailedPreconditionError, tandem.Error),
    "UNAVAILABLE": (tandem.UnavailableError, tandem.Error),
    "INTERNAL": (tandem.InternalError, tandem.Error),
    "CANCELLED": (tandem.Error, Exception),
    "ABORTED": (tandem.Error, Exception),
}


class MappingTest(unittest.TestCase):
    def test_every_code_maps_to_its_class_with_the_message_and_code(self):
        for code, (cls, builtin) in MAPPING.items():
            with self.subTest(code=code):
                with self.assertRaises(cls) as ctx:
                    _C._raise_status(code, "op 'x' failed: value 3")
                e = ctx.exception
                self.assertIsInstance(e, builtin)
                self.assertIsInstance(e, tandem.Error)
                self.assertEqual(str(e), "op 'x' failed: value 3")
                self.assertEqual(e.code, code)
                self.assertIs(type(e), cls)

    def test_unknown_code_name_is_a_value_error(self):
        with self.assertRaisesRegex(ValueError, "no status code"):
            _C._raise_status("BOGUS", "x")


class RealErrorsTest(unittest.TestCase):
    def test_bad_place_is_value_error(self):
        with self.assertRaisesRegex(ValueError, "unknown device type 'tpu'"):
            tandem.Place("tpu:0")

    def test_place_strings_are_exact(self):
        self.assertEqual(str(tandem.Place("cpu")), "cpu")
        self.assertEqual(str(tandem.Place("sim:0")), "sim:0")
        self.assertEqual(tandem.CUDAPlace(3), tandem.Place("gpu:3"))
        for bad in ("GPU", "Gpu:0", "CPU", " cpu", "cpu ", "gpu:01"):
            with self.assertRaisesRegex(ValueError, 'place "%s" is not valid: .*expected "cpu", '
                                        '"<type>" or "<type>:<index>"' % bad):
                tandem.Place(bad)
            with self.assertRaisesRegex(ValueError, 'device_guard: place "%s" is not valid' % bad):
                with tandem.device_guard(bad):
                    pass
        with self.assertRaisesRegex(ValueError, 'place "gpu:-1" is not valid'):
            tandem.CUDAPlace(-1)

    def test_missing_device_is_value_error(self):
        with self.assertRaisesRegex(ValueError, "sim:7 does not exist"):
            tandem.Executor(tandem.SimPlace(7))

    def test_missing_checkpoint_is_lookup_error(self):
        with self.assertRaisesRegex(LookupError, "does not exist") as ctx:
            tandem.io.load_checkpoint("/nonexistent/dir/ckpt")
        self.assertEqual(ctx.exception.code, "NOT_FOUND")

    def test_corrupted_checkpoint_is_io_error_and_leaves_the_scope(self):
        main, startup, _ = build(lambda: L.create_parameter([4], "float32", name="w"))
        scope = tandem.Scope()
        tandem.Executor(tandem.CPUPlace()).run(startup, scope=scope)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ckpt")
            tandem.io.save_checkpoint(path, main, scope)
            with open(path, "rb") as f:
                data = bytearray(f.read())
            data[-6] ^= 0xFF  # inside w's data: its CRC no longer matches
            with open(path, "wb") as f:
                f.write(bytes(data))
            fresh = tandem.Scope()
            with self.assertRaisesRegex(IOError, "w") as ctx:
                tandem.io.load_checkpoint(path, fresh)
            self.assertIsInstance(ctx.exception, tandem.DataLossError)
            self.assertEqual(fresh.names(), [])

    def test_out_of_device_memory_is_memory_error(self):
        main, startup, out = build(lambda: L.fill_constant([1024, 1024], "float32", 1))
        with self.assertRaisesRegex(MemoryError, "sim:1") as ctx:
            tandem.Executor(tandem.SimPlace(1)).run(main, fetch_list=[out])
        self.assertIn("requested 4194304 bytes", str(ctx.exception))
        self.assertEqual(ctx.exception.code, "RESOURCE_EXHAUSTED")

    def test_disallowed_transfer_is_failed_precondition(self):
        def b():
            x = L.fill_constant([2], "float32", 1)
            with tandem.device_guard("cpu"):
                y = L.relu(x)
            return L.scale(y, 2.0)
        main, startup, out = build(b)
        exe = tandem.Executor(tandem.SimPlace(0), transfer_policy="disallow")
        with self.assertRaisesRegex(tandem.FailedPreconditionError, "relu") as ctx:
            exe.run(main, fetch_list=[out])
        self.assertNotIsInstance(ctx.exception, ValueError)

    def test_unknown_executor_option(self):
        with self.assertRaisesRegex(ValueError, "unknown option 'cuda_graphs'.*capture_graphs"):
            tandem.Executor(tandem.CPUPlace(), cuda_graphs=True)
        with self.assertRaisesRegex(ValueError, "transfer policy|allow"):
            tandem.Executor(tandem.CPUPlace(), transfer_policy="sometimes")

    def test_unknown_flag(self):
        with self.assertRaisesRegex(LookupError, "no flag 'gpu_memory_mb'"):
            tandem.set_flags({"gpu_memory_mb": 1})
        with self.assertRaisesRegex(ValueError, "cpu_threads"):
            tandem.set_flags({"cpu_threads": "many"})

    def test_numerics_check_names_the_op(self):
        def b():
            x = tandem.data("x", [2])
            return L.elementwise_div(x, x)
        main, startup, out = build(b)
        exe = tandem.Executor(tandem.CPUPlace(), check_numerics=True)
        with self.assertRaisesRegex(ValueError, "elementwise_div.*nan"):
            exe.run(main, feed={"x": np.zeros(2, np.float32)}, fetch_list=[out])


class BadFeedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        def b():
            x = tandem.data("x", [-1, 3])
            ids = tandem.data("ids", [2], "int64")
            return [L.scale(x, 2.0), L.cast(ids, "float32")]
        cls.main, cls.startup, cls.fetch = build(b)
        cls.exe = tandem.Executor(tandem.CPUPlace())
        cls.good = {"x": np.ones((2, 3), np.float32), "ids": np.array([1, 2], np.int64)}

    def run_with(self, **changes):
        feed = dict(self.good, **changes)
        feed = {k: v for k, v in feed.items() if v is not None}
        return self.exe.run(self.main, feed=feed, fetch_list=self.fetch)

    def test_good_feed_runs(self):
        out = self.run_with()
        np.testing.assert_array_equal(out[0], np.full((2, 3), 2, np.float32))

    def test_wrong_dtype(self):
        with self.assertRaisesRegex(ValueError, "feed 'x' holds float64 but float32"):
            self.run_with(x=np.ones((2, 3)))
        with self.assertRaisesRegex(ValueError, "feed 'x' holds float16 but float32"):
            self.run_with(x=np.ones((2, 3), np.float16))
        with self.assertRaisesRegex(ValueError, "feed 'ids' holds int32 but int64"):
            self.run_with(ids=np.array([1, 2], np.int32))

    def test_wrong_shape(self):
        with self.assertRaisesRegex(ValueError, r"feed 'x' is float32\[2, 4\].*\[-1, 3\]"):
            self.run_with(x=np.ones((2, 4), np.float32))
        with self.assertRaisesRegex(ValueError, "feed 'ids'"):
            self.run_with(ids=np.array([1, 2, 3], np.int64))

    def test_unknown_and_missing_names(self):
        with self.assertRaisesRegex(ValueError, "feed 'y' is not a variable of the program"):
            self.run_with(y=np.ones(3, np.float32))
        with self.assertRaisesRegex(ValueError, "'ids'.*not fed"):
            self.run_with(ids=None)

    def test_values_that_are_not_arrays(self):
        with self.assertRaisesRegex(ValueError, "feed 'x' cannot be made into an array"):
            self.run_with(x="not numbers")
        with self.assertRaisesRegex(ValueError, "feed 'x'"):
            self.run_with(x=[[1, 2], [3]])
        out = self.run_with(x=[[1, 2, 3]])  # a list of numbers takes the declared dtype
        np.testing.assert_array_equal(out[0], [[2, 4, 6]])

    def test_device_tensor_feed(self):
        t = tandem.to_tensor(np.ones((2, 3), np.float32), place=tandem.SimPlace(0))
        with self.assertRaisesRegex(ValueError, "feed 'x' is on sim:0"):
            self.run_with(x=t)

    def test_unknown_fetch(self):
        with self.assertRaisesRegex(tandem.Error, "nope"):
            self.exe.run(self.main, feed=self.good, fetch_list=["nope"])
        with self.assertRaises(TypeError):
            self.exe.run(self.main, feed=self.good, fetch_list=[3])


if __name__ == "__main__":
    unittest.main()
