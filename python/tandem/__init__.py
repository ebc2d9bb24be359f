"""Tandem from Python: PaddlePaddle's static-graph API over Tandem's C++ core.

    import numpy as np
    import tandem

    main, startup = tandem.Program(), tandem.Program()
    with tandem.program_guard(main, startup):
        ids = tandem.data("ids", shape=[1], dtype="int64")
        label = tandem.layers.fill_constant(shape=[1, 150], dtype="float32", value=0.5)
        with tandem.device_guard("cpu"):            # the table and its lookup stay on the host
            emb = tandem.layers.embedding(ids, size=[1000000, 150], is_sparse=True)
        out = tandem.layers.l2_normalize(emb, axis=-1)
        loss = tandem.layers.mean(tandem.layers.square_error_cost(out, label))
        tandem.optimizer.SGD(learning_rate=0.001).minimize(loss)

    exe = tandem.Executor(tandem.CUDAPlace(0))      # or SimPlace(0), CPUPlace()
    exe.run(startup)
    loss_value, = exe.run(main, feed={"ids": np.array([128])}, fetch_list=[loss])
    print(exe.last_run_stats)                       # copies and bytes per direction

Modules: layers, optimizer, initializer, profiler, io (checkpoints, IDX files,
DataLoader), compiler (Paddle's CompiledProgram, a pass-through).

Programs written for Paddle 1.8's static graph run with ``import tandem as
fluid`` (and ``import tandem.compiler as compiler``, ``import tandem.profiler
as profiler``): fluid.embedding (= layers.embedding, Paddle's signature),
fluid.layers.*, default_main_program() / default_startup_program(),
device_guard, Executor.run(program=, feed=, fetch_list=) and
profiler.profiler(state, sorted_key) read as in Paddle
(python/tests/paddle_tutorial_test.py runs Paddle's device_guard tutorial).

Errors are tandem.Error subclasses that are also the matching built-in
exceptions (tandem.errors). docs/design.md describes the C++ core.
"""

from tandem import _C
from tandem.errors import *  # noqa: F401,F403
from tandem.framework import (Program, Variable, data, default_main_program,
                              default_startup_program, device_guard, program_guard,
                              transfer_policy)
from tandem.executor import (EXECUTOR_OPTIONS, CPUPlace, CUDAPlace, Executor, Place, Plan,
                             Scope, SimPlace, Tensor, available_places, device_count,
                             from_dlpack, get_flags, global_scope, is_compiled_with_cuda,
                             scope_guard, set_flags, to_tensor)
from tandem.param_attr import ParamAttr
from tandem import amp, clip, compiler, initializer, io, layers, optimizer, profiler, recompute  # noqa: E402,E501
from tandem.layers import embedding  # noqa: E402  (Paddle 1.8's fluid.embedding)

__all__ = [
    "Program", "Variable", "data", "default_main_program", "default_startup_program",
    "device_guard", "program_guard", "transfer_policy", "EXECUTOR_OPTIONS", "CPUPlace",
    "CUDAPlace", "SimPlace", "Executor", "Place", "Plan", "Scope", "Tensor", "available_places",
    "device_count", "from_dlpack", "get_flags", "global_scope", "is_compiled_with_cuda",
    "scope_guard", "set_flags", "to_tensor", "ParamAttr", "compiler", "embedding", "initializer",
    "io", "layers", "optimizer", "profiler", "amp", "clip", "recompute",
] + errors.__all__  # noqa: F405
