"""Every layer of tandem.layers built and run on cpu and sim:0 against numpy."""

import math
import unittest

import numpy as np

import tandem
from tandem import layers
from testutil import PLACES, build, rand, run

L = layers


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def conv2d_ref(x, w, b, stride, pad):
    n, c, h, wd = x.shape
    f, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    out = np.zeros((n, f, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + k, j * stride:j * stride + k]
            out[:, :, i, j] = np.einsum("nchw,fchw->nf", patch, w)
    return out + b.reshape(1, f, 1, 1)


class LayerCase(unittest.TestCase):
    def check(self, build_fn, feed, expected, params=None, rtol=1e-5, atol=1e-6):
        """Builds with build_fn (returning the fetch list), runs it on every place and
        compares each fetched value with `expected` (a list of arrays)."""
        main, startup, fetch = build(build_fn)
        for place in PLACES:
            with self.subTest(place=place):
                out = run(main, startup, fetch, feed, place, params=params)
                self.assertEqual(len(out), len(expected))
                for got, want in zip(out, expected):
                    want = np.asarray(want)
                    self.assertEqual(got.shape, want.shape)
                    self.assertEqual(got.dtype, want.dtype)
                    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


class ElementwiseTest(LayerCase):
    x = rand(2, 3, seed=1)
    y = rand(2, 3, seed=2, low=0.5, high=2.0)
    row = rand(3, seed=3)

    def feeds(self):
        return {"x": self.x, "y": self.y, "row": self.row}

    def data(self):
        return (tandem.data("x", [2, 3]), tandem.data("y", [2, 3]), tandem.data("row", [3]))

    def test_arithmetic(self):
        def b():
            x, y, row = self.data()
            return [L.elementwise_add(x, y), L.elementwise_sub(x, y), L.elementwise_mul(x, y),
                    L.elementwise_div(x, y), L.elementwise_add(x, row), x + y, x * 2.0,
                    x - 1.0, 3.0 - x, x / 4.0]
        x, y, row = self.x, self.y, self.row
        self.check(b, self.feeds(), [x + y, x - y, x * y, x / y, x + row, x + y, x * 2, x - 1,
                                     3 - x, x / 4])

    def test_broadcast_axis(self):
        col = rand(2, seed=4)
        self.check(lambda: [L.elementwise_mul(tandem.data("x", [2, 3]), tandem.data("c", [2]),
                                              axis=0)],
                   {"x": self.x, "c": col}, [self.x * col[:, None]])

    def test_matmul_mul_scale_cast(self):
        a, w = rand(2, 4, seed=5), rand(3, 4, seed=6)
        def b():
            x, m = tandem.data("a", [2, 4]), tandem.data("w", [3, 4])
            return [L.matmul(x, m, transpose_y=True, alpha=0.5),
                    L.mul(x, L.transpose(m, [1, 0])),
                    L.scale(x, scale=2.0, bias=1.0), L.scale(x, 2.0, 1.0, bias_after_scale=False),
                    L.cast(x, "float64"), L.cast(L.scale(x, 10.0), "int32")]
        self.check(b, {"a": a, "w": w},
                   [0.5 * a @ w.T, a @ w.T, 2 * a + 1, 2 * (a + 1), a.astype(np.float64),
                    (10 * a).astype(np.int32)])


class ActivationTest(LayerCase):
    x = rand(3, 5, seed=7, low=-3, high=3)

    def test_activations(self):
        def b():
            x = tandem.data("x", [3, 5])
            return [L.relu(x), L.sigmoid(x), L.tanh(x), L.softmax(x), L.softmax(x, axis=0),
                    L.fc(x, 2, act="relu", name="f"), L.l2_normalize(x, axis=-1),
                    L.gelu(x), L.gelu(x, approximate=True), L.fc(x, 2, act="gelu", name="g")]
        x = self.x
        w, bias = rand(5, 2, seed=8), rand(2, seed=9)
        l2 = x / np.sqrt((x * x).sum(-1, keepdims=True) + 1e-10)
        erf = np.vectorize(math.erf)
        gelu = lambda v: (0.5 * v * (1 + erf(v / math.sqrt(2)))).astype(np.float32)
        gelu_tanh = (0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
                     ).astype(np.float32)
        self.check(b, {"x": x}, [np.maximum(x, 0), 1 / (1 + np.exp(-x)), np.tanh(x), softmax(x),
                                 softmax(x, 0), np.maximum(x @ w + bias, 0), l2,
                                 gelu(x), gelu_tanh, gelu(x @ w + bias)],
                   params={"f.w_0": w, "f.b_0": bias, "g.w_0": w, "g.b_0": bias})

    def test_self_attention(self):
        qkv = rand(2, 5, 12, seed=10)

        def b():
            x = tandem.data("qkv", [2, 5, 12])
            return [L.self_attention(x, num_heads=2),
                    L.self_attention(x, num_heads=1, causal=False, scale=0.5)]

        def attention(heads, causal, scale):
            width = qkv.shape[-1] // 3
            d = width // heads
            out = np.zeros((2, 5, width))
            for h in range(heads):
                q, k, v = (qkv[..., p * width + h * d:p * width + (h + 1) * d].astype(np.float64)
                           for p in range(3))
                s = scale * q @ k.transpose(0, 2, 1)
                if causal:
                    s = np.where(np.tril(np.ones((5, 5))) > 0, s, -np.inf)
                p_ = np.exp(s - s.max(-1, keepdims=True))
                out[..., h * d:(h + 1) * d] = (p_ / p_.sum(-1, keepdims=True)) @ v
            return out.astype(np.float32)

        self.check(b, {"qkv": qkv}, [attention(2, True, 1 / math.sqrt(2)),
                                      attention(1, False, 0.5)])

    def test_reductions(self):
        def b():
            x = tandem.data("x", [3, 5])
            return [L.mean(x), L.reduce_sum(x), L.reduce_sum(x, dim=[1]),
                    L.reduce_mean(x, dim=0, keep_dim=True)]
        x = self.x
        self.check(b, {"x": x}, [np.array([x.mean()], np.float32), np.array([x.sum()], np.float32),
                                 x.sum(1), x.mean(0, keepdims=True)])


class LossTest(LayerCase):
    def test_losses_and_accuracy(self):
        logits = rand(4, 3, seed=10, low=-2, high=2)
        labels = np.array([0, 2, 1, 2], np.int64)
        pred, target = rand(4, 2, seed=11), rand(4, 2, seed=12)
        def b():
            lg, lb = tandem.data("logits", [-1, 3]), tandem.data("label", [-1], "int64")
            p, t = tandem.data("p", [4, 2]), tandem.data("t", [4, 2])
            loss, sm = L.softmax_with_cross_entropy(lg, lb, return_softmax=True)
            acc, correct, total = L.accuracy(lg, lb, k=1, return_counts=True)
            return [loss, sm, acc, correct, total, L.square_error_cost(p, t),
                    L.accuracy(lg, lb, k=2)]
        sm = softmax(logits.astype(np.float64))
        xent = -np.log(sm[np.arange(4), labels])[:, None]
        top1 = logits.argmax(1) == labels
        top2 = np.array([labels[i] in np.argsort(-logits[i])[:2] for i in range(4)])
        self.check(b, {"logits": logits, "label": labels, "p": pred, "t": target},
                   [xent.astype(np.float32), sm.astype(np.float32),
                    np.array([top1.mean()], np.float32), np.array([top1.sum()], np.int64),
                    np.array([4], np.int64), (pred - target) ** 2,
                    np.array([top2.mean()], np.float32)])


class ArrayTest(LayerCase):
    def test_workload2_shape_slice_crop(self):
        def b():
            d1 = L.fill_constant([1, 3, 8, 8], "float32", 0.5)
            d2 = L.fill_constant([1, 3, 5, 5], "float32", 0.5)
            s = L.shape(d2)
            with tandem.device_guard("cpu"):
                s = L.slice(s, axes=[0], starts=[0], ends=[4])
            return [L.crop_tensor(d1, shape=s), s, L.crop_tensor(d1, L.shape(d2), offsets=[0, 0, 1, 2])]
        self.check(b, {}, [np.full((1, 3, 5, 5), 0.5, np.float32), np.array([1, 3, 5, 5], np.int32),
                           np.full((1, 3, 5, 5), 0.5, np.float32)])

    def test_crop_offsets_reshape_transpose_concat_split(self):
        x = rand(2, 3, 4, seed=13)
        def b():
            v = tandem.data("x", [2, 3, 4])
            shp = L.fill_constant([3], "int32", 2)
            parts = L.split(v, 3, dim=1)
            sections = L.split(v, [1, -1], dim=2)
            return [L.crop_tensor(v, shp, offsets=[0, 1, 2]), L.reshape(v, [0, -1]),
                    L.transpose(v, [2, 0, 1]), L.concat([v, v], axis=2), parts[0], parts[2],
                    sections[1], L.slice(v, axes=[1, 2], starts=[1, 0], ends=[3, 2])]
        self.check(b, {"x": x}, [x[0:2, 1:3, 2:4], x.reshape(2, 12), x.transpose(2, 0, 1),
                                 np.concatenate([x, x], 2), x[:, 0:1], x[:, 2:3], x[:, :, 1:],
                                 x[:, 1:3, 0:2]])

    def test_fill_constant_dtypes_and_force_cpu(self):
        self.check(lambda: [L.fill_constant([2], "int64", 7), L.fill_constant([1], "float64", 0.25),
                            L.fill_constant([2, 2], "float32", -1, force_cpu=True)],
                   {}, [np.array([7, 7], np.int64), np.array([0.25]), np.full((2, 2), -1, np.float32)])


class ParameterLayerTest(LayerCase):
    def test_embedding_lookup_table_and_parameters(self):
        table = rand(10, 4, seed=14)
        ids = np.array([3, 0, 9], np.int64)
        def b():
            i = tandem.data("ids", [3], "int64")
            e = L.embedding(i, size=[10, 4], param_attr=tandem.ParamAttr(name="table"))
            p = L.create_parameter([10, 4], "float32", name="p2")
            g = L.create_global_var([2], 1.5, "float32", name="g")
            return [e, L.lookup_table(i, p), g, L.embedding(i, [10, 4], padding_idx=0,
                                                            param_attr=tandem.ParamAttr(name="t3"))]
        padded = table[ids].copy()
        padded[ids == 0] = 0
        self.check(b, {"ids": ids}, [table[ids], table[ids] * 2, np.array([1.5, 1.5], np.float32),
                                     padded],
                   params={"table": table, "p2": table * 2, "t3": table})

    def test_initializers(self):
        def b():
            init = tandem.initializer
            return [L.create_parameter([3], "float32", name="c",
                                       default_initializer=init.Constant(0.75)),
                    L.create_parameter([1000], "float32", name="u",
                                       attr=tandem.ParamAttr(initializer=init.Uniform(2, 3, 5)))]
        main, startup, fetch = build(b)
        for place in PLACES:
            c, u = run(main, startup, fetch, place=place)
            np.testing.assert_array_equal(c, np.full(3, 0.75, np.float32))
            self.assertTrue(((u >= 2) & (u < 3)).all())
            self.assertGreater(u.std(), 0.2)
            u_cpu = run(main, startup, fetch, place="cpu")[1]
            np.testing.assert_array_equal(u, u_cpu)  # counter-based: the same bits everywhere

    def test_conv2d_pool2d(self):
        x = rand(2, 3, 6, 6, seed=15)
        w, bias = rand(4, 3, 3, 3, seed=16), rand(4, seed=17)
        def b():
            v = tandem.data("x", [-1, 3, 6, 6])
            c = L.conv2d(v, num_filters=4, filter_size=3, stride=1, padding=1, name="conv")
            return [c, L.pool2d(v, pool_size=2, pool_type="max", pool_stride=2),
                    L.pool2d(v, pool_size=3, pool_type="avg", pool_stride=3),
                    L.pool2d(v, pool_type="avg", global_pooling=True)]
        maxp = x.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5))
        avgp = x.reshape(2, 3, 2, 3, 2, 3).mean(axis=(3, 5))
        self.check(b, {"x": x}, [conv2d_ref(x, w, bias, 1, 1).astype(np.float32), maxp, avgp,
                                 x.mean(axis=(2, 3), keepdims=True)],
                   params={"conv.w_0": w, "conv.b_0": bias}, rtol=1e-4, atol=1e-5)

    def test_layer_norm_dropout(self):
        x = rand(4, 6, seed=18)
        def b():
            v = tandem.data("x", [4, 6])
            return [L.layer_norm(v, begin_norm_axis=1, name="ln"),
                    L.dropout(v, 0.5, is_test=True), L.dropout(v, 0.5, seed=3)]
        norm = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
        main, startup, fetch = build(b)
        for place in PLACES:
            ln, ident, drop = run(main, startup, fetch, {"x": x}, place)
            np.testing.assert_allclose(ln, norm, rtol=1e-4, atol=1e-5)
            np.testing.assert_array_equal(ident, x)
            kept = drop != 0
            np.testing.assert_allclose(drop[kept], 2 * x[kept], rtol=1e-6)  # upscale in train
            self.assertTrue(0 < kept.sum() < x.size)

    def test_append_op(self):
        x = rand(2, 2, seed=19)
        def b():
            v = tandem.data("x", [2, 2])
            out = L.append_op("scale", inputs={"X": v}, outputs=["Out"],
                              attrs={"scale": 3.0, "bias": 0.5})
            return out["Out"]
        self.check(b, {"x": x}, [3 * x + 0.5])


class BuildErrorTest(unittest.TestCase):
    def test_a_bad_layer_raises_and_leaves_the_program_as_it_was(self):
        main, startup = tandem.Program(), tandem.Program()
        with tandem.program_guard(main, startup):
            x = tandem.data("x", [2, 3])
            before = main.num_ops
            with self.assertRaisesRegex(ValueError, "matmul"):
                L.matmul(x, x)  # [2, 3] @ [2, 3]
            self.assertEqual(main.num_ops, before)
            self.assertEqual(L.relu(x).shape, (2, 3))  # the builder is usable afterwards

    def test_bad_device_guard(self):
        with self.assertRaisesRegex(ValueError, "tpu"):
            with tandem.device_guard("tpu:0"):
                pass


if __name__ == "__main__":
    unittest.main()
