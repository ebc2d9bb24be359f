"""ParamAttr: the name and initializer of a layer's parameter.

    emb = tandem.layers.embedding(ids, size=[10000000, 150], param_attr=tandem.ParamAttr(
        name="emb_w", initializer=tandem.initializer.Uniform(-0.05, 0.05, seed=7)))
"""

__all__ = ["ParamAttr"]


class ParamAttr:
    """``name``: the parameter's variable name (embedding, create_parameter);
    fc, conv2d and layer_norm name theirs "<layer name>.w_0" / ".b_0" from the
    layer's ``name``. ``initializer``: a tandem.initializer."""

    def __init__(self, name=None, initializer=None):
        self.name = name
        self.initializer = initializer

    def __repr__(self):
        return "ParamAttr(name=%r, initializer=%r)" % (self.name, self.initializer)
