"""DLPack exchange with PyTorch, device tensors included (runs where torch and a GPU are)."""

import unittest

import numpy as np

import tandem
from tandem import layers as L
from testutil import build

try:
    import torch
except ImportError:  # this machine has no PyTorch: the H200 machine runs these
    torch = None

HAS_GPU = tandem.device_count("gpu") > 0


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TorchCpuTest(unittest.TestCase):
    def test_round_trip_shares_memory(self):
        a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        t = tandem.from_dlpack(a)
        self.assertEqual((t.shape, t.dtype, str(t.place)), ([2, 3], "float32", "cpu"))
        self.assertEqual(t.data_ptr(), a.data_ptr())
        b = torch.from_dlpack(t)
        self.assertEqual(b.data_ptr(), a.data_ptr())


@unittest.skipIf(torch is None or not HAS_GPU or not torch.cuda.is_available(),
                 "needs PyTorch and a CUDA GPU")
class TorchGpuTest(unittest.TestCase):
    def test_torch_cuda_tensor_to_tandem(self):
        a = torch.arange(12, dtype=torch.float32, device="cuda:0").reshape(3, 4)
        torch.cuda.synchronize()
        t = tandem.from_dlpack(a)
        self.assertEqual(str(t.place), "gpu:0")
        self.assertEqual(t.data_ptr(), a.data_ptr())
        np.testing.assert_array_equal(t.numpy(), a.cpu().numpy())

    def test_tandem_gpu_tensor_to_torch(self):
        x = np.arange(8, dtype=np.int64)
        t = tandem.to_tensor(x, place=tandem.CUDAPlace(0))
        b = torch.from_dlpack(t)
        self.assertEqual(b.device, torch.device("cuda", 0))
        self.assertEqual(b.data_ptr(), t.data_ptr())
        np.testing.assert_array_equal(b.cpu().numpy(), x)

    def test_a_trained_gpu_parameter_goes_to_torch(self):
        def b():
            ids = tandem.data("ids", [2], "int64")
            emb = L.embedding(ids, size=[16, 4], param_attr=tandem.ParamAttr(name="table"))
            loss = L.mean(L.square_error_cost(emb, L.fill_constant([2, 4], "float32", 0.5)))
            tandem.optimizer.SGD(0.1).minimize(loss)
            return loss
        main, startup, loss = build(b)
        exe, scope = tandem.Executor(tandem.CUDAPlace(0)), tandem.Scope()
        exe.run(startup, scope=scope)
        for _ in range(3):
            exe.run(main, feed={"ids": np.array([1, 2])}, fetch_list=[loss], scope=scope)
        table = scope.find_var("table").get_tensor()
        self.assertEqual(str(table.place), "gpu:0")
        w = torch.from_dlpack(table)
        self.assertEqual(w.data_ptr(), table.data_ptr())
        np.testing.assert_array_equal(w.cpu().numpy(), table.numpy())
        # and back: torch's values become the parameter Tandem trains on
        zeros = torch.zeros(16, 4, device="cuda:0")
        torch.cuda.synchronize()  # Tandem's streams do not wait for torch's
        scope.find_var("table").set(tandem.from_dlpack(zeros))
        self.assertEqual(float(exe.run(main, feed={"ids": np.array([1, 2])}, fetch_list=[loss],
                                       scope=scope)[0][0]), 0.25)


if __name__ == "__main__":
    unittest.main()
