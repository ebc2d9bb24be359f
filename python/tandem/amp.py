"""Automatic mixed precision: a program's products in bfloat16 or float16.

    main, startup = tandem.Program(), tandem.Program()
    with tandem.program_guard(main, startup):
        ... build the model and its loss ...
        tandem.amp.apply(main, "bfloat16")       # before minimize
        tandem.optimizer.Adam(1e-3).minimize(loss)

mul, matmul, fc and conv2d then compute in the 16-bit type (float32 sums,
one rounding), every other op stays float32, and parameters keep float32
master values that the optimizer updates in float32 (docs/design.md,
section 5). bfloat16 needs no loss scaling; train float16 with the
optimizer's enable_dynamic_loss_scaling() (before minimize).
"""

from tandem.framework import default_main_program

__all__ = ["apply"]


def apply(program=None, dtype="bfloat16"):
    """Rewrites `program` (default: the default main program) for mixed
    precision in `dtype` ("bfloat16"/"bf16" or "float16"/"fp16"); returns the
    ops it put in 16 bits, e.g. ["fc #0", "fc #3"]. Raises
    FailedPreconditionError if the program already has backward ops."""
    program = default_main_program() if program is None else program
    return list(program._h.apply_amp(str(dtype)))
