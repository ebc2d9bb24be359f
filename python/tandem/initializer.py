"""How the startup program fills a parameter (``param_attr=ParamAttr(initializer=...)``).

    w = tandem.initializer.Uniform(-0.05, 0.05, seed=7)
    emb = tandem.layers.embedding(ids, size=[1000, 16],
                                  param_attr=tandem.ParamAttr(initializer=w))

Random initializers draw counter-based numbers: the same bits on every
backend for one seed; seed 0 derives the seed from the parameter's name
(the C++ builder's ``DefaultSeed``), so a program built twice gets the same
weights.
"""

from tandem import _C


def Constant(value=0.0):
    """Every element ``value``."""
    return _C.Initializer.constant(float(value))


def Uniform(low=-1.0, high=1.0, seed=0):
    """Uniform in [low, high)."""
    return _C.Initializer.uniform(float(low), float(high), int(seed))


def Normal(loc=0.0, scale=1.0, seed=0):
    """Normal with mean ``loc`` and standard deviation ``scale``."""
    return _C.Initializer.normal(float(loc), float(scale), int(seed))


def Xavier(uniform=True, seed=0):
    """Glorot: uniform in [-a, a), a = sqrt(6 / (fan_in + fan_out)), or normal with
    std sqrt(2 / (fan_in + fan_out))."""
    return _C.Initializer.xavier_uniform(int(seed)) if uniform else _C.Initializer.xavier_normal(
        int(seed))


ConstantInitializer = Constant
UniformInitializer = Uniform
NormalInitializer = Normal
XavierInitializer = Xavier

__all__ = ["Constant", "Uniform", "Normal", "Xavier", "ConstantInitializer",
           "UniformInitializer", "NormalInitializer", "XavierInitializer"]
