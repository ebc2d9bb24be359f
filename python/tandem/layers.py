"""Layers: one function per op of Tandem's ProgramBuilder, Paddle's names and
argument names, Tandem's defaults (the C++ builder's, so a program built here
equals the one C++ builds).

    ids = tandem.layers.data("ids", shape=[1], dtype="int64", append_batch_size=False)
    with tandem.device_guard("cpu"):
        emb = tandem.layers.embedding(ids, size=[10000000, 150], is_sparse=True)
    loss = tandem.layers.mean(tandem.layers.square_error_cost(
        tandem.layers.l2_normalize(emb, axis=-1), label))

Each call validates its op against the op's schema (dtypes, shapes,
attributes) and raises tandem.InvalidArgumentError (a ValueError) naming
the op and the argument; the program is left as it was before the call.
Any registered op without a function here is reachable through append_op.
"""

from tandem import _C
from tandem import initializer as _init
from tandem.framework import Variable, _dtype, _name, _target, _var, device_guard
from tandem.param_attr import ParamAttr

__all__ = [
    "data", "fill_constant", "create_parameter", "create_global_var", "embedding",
    "lookup_table", "fc", "conv2d", "pool2d", "layer_norm", "dropout", "l2_normalize",
    "square_error_cost", "mean", "softmax_with_cross_entropy", "accuracy", "relu", "sigmoid",
    "tanh", "gelu", "softmax", "self_attention", "elementwise_add", "elementwise_sub", "elementwise_mul",
    "elementwise_div", "matmul", "mul", "scale", "cast", "reduce_sum", "reduce_mean", "shape",
    "slice", "crop_tensor", "reshape", "transpose", "concat", "split", "append_op",
]

_L = _C.layers
_ACTIVATIONS = ("relu", "sigmoid", "tanh", "gelu", "softmax")


def _act(x, act):
    if act is None:
        return x
    if act not in _ACTIVATIONS:
        raise ValueError("act must be one of %s or None, got %r" % (", ".join(_ACTIVATIONS), act))
    return globals()[act](x)


def _init_of(attr, default):
    if attr is None or attr is True:
        return default
    if isinstance(attr, ParamAttr):
        return attr.initializer if attr.initializer is not None else default
    if isinstance(attr, _C.Initializer):
        return attr
    raise TypeError("param_attr must be a tandem.ParamAttr, an initializer or None, got %r" %
                    (attr,))


def _no_param_name(attr, layer):
    if isinstance(attr, ParamAttr) and attr.name is not None:
        raise ValueError("%s names its parameters '<name>.w_0' and '<name>.b_0': pass name=... "
                         "to the layer instead of ParamAttr(name=%r)" % (layer, attr.name))


def _ints(values, what):
    if isinstance(values, int):
        return [values]
    try:
        return [int(v) for v in values]
    except TypeError:
        raise TypeError("%s must be a list of ints, got %r" % (what, values)) from None


# Data, constants, parameters.

def data(name, shape, dtype="float32", append_batch_size=True, lod_level=0):
    """A fed variable; Paddle 1.x's layers.data prepends a batch dim (-1) unless
    ``append_batch_size`` is False (tandem.data never does)."""
    dims = [-1 if d is None else int(d) for d in shape]
    if append_batch_size:
        dims = [-1] + dims
    return _var(_L.data(_target(), name, _dtype(dtype), dims))


def fill_constant(shape, dtype, value, force_cpu=False, name=None):
    """A tensor of ``shape`` filled with ``value`` (folded: computed once per plan)."""
    if force_cpu:
        with device_guard("cpu"):
            return fill_constant(shape, dtype, value)
    return _var(_L.fill_constant(_target(), _ints(shape, "shape"), _dtype(dtype), float(value)))


def create_parameter(shape, dtype, name=None, attr=None, default_initializer=None):
    """A trainable parameter initialised by the startup program."""
    init = _init_of(attr, default_initializer or _init.Uniform(-0.05, 0.05))
    pname = name or (attr.name if isinstance(attr, ParamAttr) else None)
    if not pname:
        raise ValueError("create_parameter needs a name (name= or ParamAttr(name=...))")
    return _var(_L.create_parameter(_target(), pname, _dtype(dtype), _ints(shape, "shape"), init))


def create_global_var(shape, value, dtype, persistable=True, force_cpu=False, name=None):
    """A persistable, non-trainable variable set to ``value`` by the startup program."""
    if not persistable:
        raise ValueError("create_global_var makes persistable variables; use fill_constant")
    if not name:
        raise ValueError("create_global_var needs a name")
    if force_cpu:
        with device_guard("cpu"):
            return create_global_var(shape, value, dtype, persistable, False, name)
    return _var(_L.create_persistable_constant(_target(), name, _dtype(dtype),
                                               _ints(shape, "shape"), float(value)))


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None,
              param_attr=None, dtype="float32"):
    """Creates the table [rows, dim] (``size``) on the current device and looks
    ``input`` (int64 ids) up: out = ids.shape + [dim]. ``is_sparse``: the
    gradient is SelectedRows and only the looked-up rows are updated."""
    if _dtype(dtype) != "float32":
        raise ValueError("embedding tables are float32, got %r" % (dtype,))
    init = _init_of(param_attr, _init.Uniform(-0.05, 0.05))
    pname = param_attr.name if isinstance(param_attr, ParamAttr) and param_attr.name else ""
    return _var(_L.embedding(_target(), _name(input, "embedding input"), _ints(size, "size"),
                             bool(is_sparse), -1 if padding_idx is None else int(padding_idx),
                             init, pname))


def lookup_table(ids, table, is_sparse=False, padding_idx=None):
    """Rows of an existing ``table`` variable."""
    return _var(_L.lookup_table(_target(), _name(ids, "ids"), _name(table, "table"),
                                bool(is_sparse), -1 if padding_idx is None else int(padding_idx)))


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None):
    """input's dims from num_flatten_dims on, flattened, times a new weight
    "<name>.w_0" (Xavier-uniform unless param_attr says), plus "<name>.b_0"
    (zeros; bias_attr=False: none); ``act`` applied after."""
    _no_param_name(param_attr, "fc")
    out = _L.fc(_target(), _name(input, "fc input"), int(size), int(num_flatten_dims),
                bias_attr is not False, name or "", _init_of(param_attr, _init.Xavier()))
    return _act(_var(out), act)


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
           param_attr=None, bias_attr=None, act=None, name=None):
    """A 2-D convolution of NCHW ``input`` with square filters."""
    if dilation != 1:
        raise ValueError("conv2d: dilation %r is not supported (1 only)" % (dilation,))
    _no_param_name(param_attr, "conv2d")
    out = _L.conv2d(_target(), _name(input, "conv2d input"), int(num_filters), int(filter_size),
                    int(stride), int(padding), int(groups or 1), bias_attr is not False,
                    name or "", _init_of(param_attr, _init.Xavier()))
    return _act(_var(out), act)


def pool2d(input, pool_size=2, pool_type="max", pool_stride=1, pool_padding=0,
           global_pooling=False, exclusive=True, name=None):
    """Max or average pooling of NCHW ``input`` over square windows."""
    return _var(_L.pool2d(_target(), _name(input, "pool2d input"), int(pool_size), pool_type,
                          int(pool_stride), int(pool_padding), bool(global_pooling),
                          bool(exclusive)))


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-05, act=None,
               name=None):
    """Normalisation over dims [begin_norm_axis, rank), with "<name>.scale_0" and "<name>.b_0"."""
    return _act(_var(_L.layer_norm(_target(), _name(input, "layer_norm input"),
                                   int(begin_norm_axis), float(epsilon), bool(scale),
                                   bool(shift), name or "")), act)


def dropout(x, dropout_prob, is_test=False, seed=None, name=None):
    """Seeded dropout (upscale in train); ``is_test``: the identity."""
    return _var(_L.dropout(_target(), _name(x, "x"), float(dropout_prob), bool(is_test),
                           int(seed or 0)))


# Losses and metrics.

def l2_normalize(x, axis, epsilon=1e-10, name=None):
    return _var(_L.l2_normalize(_target(), _name(x, "x"), int(axis), float(epsilon)))


def square_error_cost(input, label):
    return _var(_L.square_error_cost(_target(), _name(input, "input"), _name(label, "label")))


def mean(x, name=None):
    return _var(_L.mean(_target(), _name(x, "x")))


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100,
                               return_softmax=False, axis=-1):
    """The per-row loss [..., 1] of int64 class labels over the last dim of logits."""
    if soft_label:
        raise ValueError("softmax_with_cross_entropy: soft labels are not supported")
    if axis != -1:
        raise ValueError("softmax_with_cross_entropy: only axis=-1 is supported, got %r" % (axis,))
    loss, softmax_out = _L.softmax_with_cross_entropy(_target(), _name(logits, "logits"),
                                                      _name(label, "label"), int(ignore_index))
    return (_var(loss), _var(softmax_out)) if return_softmax else _var(loss)


def accuracy(input, label, k=1, return_counts=False):
    """The float32 [1] fraction of rows whose label is among the top-k scores;
    with ``return_counts`` also the int64 [1] correct and total counts."""
    acc, correct, total = _L.accuracy(_target(), _name(input, "input"), _name(label, "label"),
                                      int(k))
    return (_var(acc), _var(correct), _var(total)) if return_counts else _var(acc)


# Math.

def relu(x, name=None):
    return _var(_L.relu(_target(), _name(x, "x")))


def sigmoid(x, name=None):
    return _var(_L.sigmoid(_target(), _name(x, "x")))


def tanh(x, name=None):
    return _var(_L.tanh(_target(), _name(x, "x")))


def gelu(x, approximate=False, name=None):
    """x * Phi(x), Phi the standard normal CDF (Paddle's ``fluid.layers.gelu``);
    ``approximate=True``: the tanh form 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    return _var(_L.gelu(_target(), _name(x, "x"), bool(approximate)))


def self_attention(qkv, num_heads, causal=True, scale=0.0, name=None):
    """Multi-head scaled dot-product self-attention (Tandem's fused op; Paddle
    1.8 has no single-op equivalent). ``qkv`` [batch, seq, 3 * width] holds the
    query, key and value projections side by side (e.g. ``fc(x, 3 * width,
    num_flatten_dims=2)``); head h of each is its columns [h * d, (h + 1) * d),
    d = width / num_heads. With ``causal``, token i attends to tokens 0..i.
    ``scale`` multiplies the scores (0: 1 / sqrt(d)). Returns [batch, seq,
    width]. Only per-row softmax statistics are kept for the gradient."""
    return _var(_L.self_attention(_target(), _name(qkv, "qkv"), int(num_heads), bool(causal),
                                  float(scale)))


def softmax(input, axis=-1, name=None):
    return _var(_L.softmax(_target(), _name(input, "input"), int(axis)))


def _elementwise(op, x, y, axis, act):
    out = getattr(_L, op)(_target(), _name(x, "x"), _name(y, "y"), int(axis))
    return _act(_var(out), act)


def elementwise_add(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_add", x, y, axis, act)


def elementwise_sub(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_sub", x, y, axis, act)


def elementwise_mul(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_mul", x, y, axis, act)


def elementwise_div(x, y, axis=-1, act=None, name=None):
    return _elementwise("elementwise_div", x, y, axis, act)


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    return _var(_L.matmul(_target(), _name(x, "x"), _name(y, "y"), bool(transpose_x),
                          bool(transpose_y), float(alpha)))


def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None):
    return _var(_L.mul(_target(), _name(x, "x"), _name(y, "y"), int(x_num_col_dims),
                       int(y_num_col_dims)))


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    return _act(_var(_L.scale(_target(), _name(x, "x"), float(scale), float(bias),
                              bool(bias_after_scale))), act)


def cast(x, dtype):
    return _var(_L.cast(_target(), _name(x, "x"), _dtype(dtype)))


def reduce_sum(input, dim=None, keep_dim=False, name=None):
    dims = [] if dim is None else _ints(dim, "dim")
    return _var(_L.reduce_sum(_target(), _name(input, "input"), dims, bool(keep_dim)))


def reduce_mean(input, dim=None, keep_dim=False, name=None):
    dims = [] if dim is None else _ints(dim, "dim")
    return _var(_L.reduce_mean(_target(), _name(input, "input"), dims, bool(keep_dim)))


# Shapes and arrays.

def shape(input):
    """input's dims as an int32 tensor, written in host memory."""
    return _var(_L.shape(_target(), _name(input, "input")))


def slice(input, axes, starts, ends):
    return _var(_L.slice(_target(), _name(input, "input"), _ints(axes, "axes"),
                         _ints(starts, "starts"), _ints(ends, "ends")))


def crop_tensor(x, shape=None, offsets=None, name=None):
    """x cropped to ``shape``, a Variable (an int32 tensor, read in host memory)."""
    if not isinstance(shape, Variable):
        raise TypeError("crop_tensor: shape must be a Variable (e.g. layers.shape(y)), got %r" %
                        (shape,))
    return _var(_L.crop_tensor(_target(), _name(x, "x"), _name(shape, "shape"),
                               [] if offsets is None else _ints(offsets, "offsets")))


def reshape(x, shape, name=None):
    """x with dims ``shape`` (0 copies x's dim, one -1 is inferred); shares x's buffer."""
    return _var(_L.reshape(_target(), _name(x, "x"), _ints(shape, "shape")))


def transpose(x, perm, name=None):
    return _var(_L.transpose(_target(), _name(x, "x"), _ints(perm, "perm")))


def concat(input, axis=0, name=None):
    return _var(_L.concat(_target(), [_name(x, "input") for x in input], int(axis)))


def split(input, num_or_sections, dim=0, name=None):
    """input cut along ``dim`` into num equal pieces, or pieces of the sizes listed."""
    if isinstance(num_or_sections, int):
        names = _L.split(_target(), _name(input, "input"), num_or_sections, int(dim))
    else:
        names = _L.split_sections(_target(), _name(input, "input"),
                                  _ints(num_or_sections, "num_or_sections"), int(dim))
    return [_var(n) for n in names]


def append_op(type, inputs, outputs, attrs=None, output_names=None, output_counts=None):
    """Any registered op: ``inputs`` maps argument names to Variables (or lists),
    ``outputs`` lists the output arguments to create; returns {argument: [Variable]}."""
    ins = {}
    for arg, value in inputs.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        ins[arg] = [_name(v, "%s input %s" % (type, arg)) for v in values]
    out = _L.append_op(_target(), type, ins, dict(attrs or {}), list(outputs),
                       dict(output_names or {}), dict(output_counts or {}))
    return {arg: [_var(n) for n in names] for arg, names in out.items()}
