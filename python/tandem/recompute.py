"""Activation recomputation: cheap forward values made again in the backward.

    main, startup = tandem.Program(), tandem.Program()
    with tandem.program_guard(main, startup):
        ... build the model and its loss ...
        tandem.optimizer.Adam(1e-3).minimize(loss)
        tandem.recompute.apply(main)             # after minimize

The outputs of cast, gelu, relu and layer_norm that the backward reads are no
longer kept from the forward: a copy of the op that made each runs again
right before the backward needs it (docs/design.md, section 5). The losses
are bit for bit those of the program without it; the device holds less.
"""

from tandem.framework import default_main_program

__all__ = ["apply"]


def apply(program=None, ops=None, parameter_casts=False):
    """Rewrites `program` (default: the default main program); returns the
    forward values no longer kept, e.g. ["h (gelu #12)"]. `ops`: the op types
    that may run again (default cast, gelu, relu, layer_norm); random ones
    (dropout) are refused. `parameter_casts`: also recompute 16-bit casts of
    parameters. Raises FailedPreconditionError if the program has no backward
    ops yet."""
    program = default_main_program() if program is None else program
    return list(program._h.apply_recompute(None if ops is None else list(ops),
                                           bool(parameter_casts)))
