"""Helpers for Tandem's Python tests: build a program, run it on cpu and sim."""

import numpy as np

import tandem

PLACES = ("cpu", "sim:0")


def build(fn):
    """(main, startup, fn's result) with fn() run under a fresh program_guard."""
    main, startup = tandem.Program(), tandem.Program()
    with tandem.program_guard(main, startup):
        result = fn()
    return main, startup, result


def run(main, startup, fetch, feed=None, place="cpu", scope=None, steps=1, params=None,
        **options):
    """The fetched numpy arrays of the last of `steps` runs of main on `place`, after
    startup and after setting the scope variables in `params` ({name: array})."""
    exe = tandem.Executor(tandem.Place(place), **options)
    scope = scope or tandem.Scope()
    exe.run(startup, scope=scope)
    for name, value in (params or {}).items():
        scope.find_var(name).set(value)
    out = None
    for _ in range(steps):
        out = exe.run(main, feed=feed or {}, fetch_list=fetch, scope=scope)
    return out


def rand(*shape, seed=0, low=-1.0, high=1.0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)
