"""Places, scopes, tensors and the executor.

    exe = tandem.Executor(tandem.CUDAPlace(0), transfer_policy="log")
    exe.run(startup)                                   # once: initialises the parameters
    loss_value, = exe.run(main, feed={"ids": ids}, fetch_list=[loss])   # numpy arrays
    exe.last_run_stats.copies_h2d                      # what that run copied
    for row in exe.last_plan.placement_table: ...      # op, place, cause, detail, copy

``Executor(place, **options)`` takes the executor's options as keywords
(tandem.EXECUTOR_OPTIONS lists them): strict_placement, transfer_policy
("allow", "log", "disallow"), capture_graphs, in_order, check_numerics,
host_workers, schedule_trial (default True: after a few runs a plan times
its runs in order against concurrent ones and keeps the faster, shown in
placement_table_string(); False: always concurrent), fuse_patterns
(default False: known op chains, today l2_normalize -> square_error_cost
-> mean and its backward, run as one op each where nothing else reads the
intermediates; the program itself is left as it is), feed_shapes
({name: shape}, for the memory estimate of
programs with -1 dims), and automatic placement: auto_placement (place
every op without device_guard on the cpu or ``place``: the smallest
estimated step time with the device's estimated peak within the budget),
memory_budget_mb (0: what the device can hold, less a margin),
auto_moves_persistables, cost_cache_dir ("" keeps measured op times in
memory) and measure_costs (False: analytical costs only); optimizer
offload: offload ("optimizer": every trained parameter's float32 value and
optimizer state live in host memory and are updated there, the device
reading 16-bit copies of them, needs tandem.amp; "auto": only as many, last
read first, as memory_budget_mb needs) and offload_fraction (with
"optimizer": that share of the parameters' bytes). A run prepares
its program once per (program version, feed names, fetch list, scope) and
reuses that plan; changing the program makes the next run prepare it
again.

    exe = tandem.Executor(tandem.CUDAPlace(0), auto_placement=True, memory_budget_mb=4096)
    plan = exe.prepare(main, ["ids"], [loss])
    plan.auto_summary                 # "auto placement on gpu:0 (budget 4.0 GiB, est. peak ...)"
    [(r.op_type, r.place, r.cause, r.detail) for r in plan.placement_table if r.cause == "auto"]
    plan.memory_estimate[0].peak_bytes   # per place: peak, breakdown, largest values

Feeds are host arrays of the variables' dtypes: numpy arrays (C-contiguous,
aligned ones are used in place, without a copy), tandem.Tensor objects,
objects with __dlpack__, or lists and numbers. A wrong dtype, shape or name
raises InvalidArgumentError (a ValueError) naming the feed. Fetched values
come back as numpy arrays that view Tandem's buffers whenever nothing else
holds them (a copy otherwise, e.g. a parameter that later runs update).

The run itself releases the GIL. Ctrl-C during a run on the main thread
cancels it (Executor::Cancel): it stops before its next op, device work
already queued finishes, the scope keeps its values from before the run,
and KeyboardInterrupt is raised; a run whose updates have begun completes
first. The executor stays usable.
"""

import contextlib

from tandem import _C
from tandem.compiler import CompiledProgram
from tandem.framework import Program, Variable, default_main_program

__all__ = [
    "Executor", "Place", "CPUPlace", "CUDAPlace", "SimPlace", "Scope", "global_scope",
    "scope_guard", "Tensor", "from_dlpack", "to_tensor", "EXECUTOR_OPTIONS", "device_count",
    "is_compiled_with_cuda", "available_places", "set_flags", "get_flags",
]

Place = _C.Place
Scope = _C.Scope
Tensor = _C.Tensor
EXECUTOR_OPTIONS = tuple(_C.EXECUTOR_OPTIONS)


def CPUPlace():
    return Place("cpu")


def CUDAPlace(index=0):
    return Place("gpu:%d" % index)


def SimPlace(index=0):
    """A simulated accelerator (the sim backend): asynchronous streams and its own
    memory, so placement and copies behave as on a GPU without one."""
    return Place("sim:%d" % index)


def device_count(type="gpu"):
    """How many devices of ``type`` ("gpu", "sim") this build and machine have."""
    return _C.device_count(type)


def is_compiled_with_cuda():
    return device_count("gpu") > 0


def available_places():
    return _C.available_places()


def set_flags(flags):
    """Sets backend flags by name, e.g. {"sim_devices": 1, "cpu_threads": 2,
    "gpu_memory_limit_mb": 1024} (the gflags the C++ programs take)."""
    for name, value in flags.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        _C.set_flag(name, str(value))


def get_flags(names):
    """{name: value as a string} of backend flags."""
    if isinstance(names, str):
        names = [names]
    return {n: _C.get_flag(n) for n in names}


_scopes = [Scope()]


def global_scope():
    """The scope runs use when given none."""
    return _scopes[-1]


@contextlib.contextmanager
def scope_guard(scope):
    """Runs inside use ``scope`` by default."""
    _scopes.append(scope)
    try:
        yield
    finally:
        _scopes.pop()


def from_dlpack(x):
    """A tandem.Tensor sharing the memory of ``x`` (numpy, PyTorch, JAX, CuPy: anything with
    __dlpack__, or a DLPack capsule). A CUDA producer's pending work must be complete
    (e.g. torch.cuda.synchronize()): Tandem's streams do not wait for other streams."""
    return _C.from_dlpack(x)


def to_tensor(value, dtype=None, place=None):
    """A tandem.Tensor of ``value``; a suitable host array is shared, not copied; on
    ``place`` if given (copied there)."""
    return _C.to_tensor(value, dtype, place)


def _fetch_name(f):
    if isinstance(f, Variable):
        return f.name
    if isinstance(f, str):
        return f
    raise TypeError("fetch_list items must be Variables or names, got %r" % (f,))


class Plan:
    """A prepared program: its placement table, copies and what it feeds and fetches."""

    def __init__(self, handle, program):
        self._h = handle
        self.program = program

    @property
    def placement_table(self):
        """[PlacementEntry(op_index, op_type, place, cause, detail, copy)] per placed op:
        cause is the rule that placed it ("auto" for the auto pass, whose detail gives
        the estimated times and, when the budget decided, the value that did not fit);
        copy is a CopyStep for copy ops, else None."""
        return self._h.placement_table

    @property
    def auto_summary(self):
        """The auto placement's summary line (budget, estimated peak and step time,
        copies, ops on the cpu), or "" without auto_placement."""
        return self._h.auto_summary

    @property
    def estimated_step_us(self):
        """The auto placement's estimated step time in microseconds (0 without it)."""
        return self._h.estimated_step_us

    @property
    def memory_estimate(self):
        """[PlaceMemory] per place: peak_bytes (one run), pipelined_peak_bytes (two runs
        in flight), its breakdown, peak_at and the largest values live then."""
        return self._h.memory_estimate

    def placement_table_string(self):
        return self._h.placement_table_string()

    @property
    def num_copies(self):
        return self._h.num_copies

    @property
    def feed_names(self):
        return self._h.feed_names

    @property
    def fetch_names(self):
        return self._h.fetch_names

    def placed_program_string(self):
        return self._h.placed_program_string()

    @property
    def graph_fallback_reason(self):
        return self._h.graph_fallback_reason

    @property
    def graph_summary(self):
        """With capture_graphs, once the plan ran captured: its graph segments
        and the device steps run eagerly, and why ("" otherwise)."""
        return self._h.graph_summary

    def __str__(self):
        return self.placement_table_string()


class Executor:
    """Runs programs on ``place`` (the default place of ops without a device_guard)."""

    def __init__(self, place=None, **options):
        if place is None:
            place = CUDAPlace(0) if is_compiled_with_cuda() else CPUPlace()
        if isinstance(place, str):
            place = Place(place)
        self.place = place
        self._exe = _C.Executor(place, options)
        self._last_program = None

    def prepare(self, program=None, feed_names=(), fetch_list=(), scope=None):
        """The plan of ``program`` for these feeds and fetches (cached like run's)."""
        if isinstance(program, CompiledProgram):
            program = program.program
        program = program or default_main_program()
        handle = self._exe.prepare(program._h, sorted(feed_names),
                                   [_fetch_name(f) for f in fetch_list or []],
                                   scope or global_scope(), True)
        return Plan(handle, program)

    def run(self, program=None, feed=None, fetch_list=None, feed_var_name="feed",
            fetch_var_name="fetch", scope=None, return_numpy=True, use_program_cache=True):
        """Runs ``program`` (default: the default main program; or a Plan, or a
        tandem.compiler.CompiledProgram, which runs its program) once and returns the
        values of ``fetch_list`` (Variables or names) as numpy arrays (tandem.Tensor
        objects when return_numpy is False). feed_var_name and fetch_var_name are
        Paddle's and not used."""
        scope = scope or global_scope()
        if isinstance(program, CompiledProgram):
            program = program.program
        feed = dict(feed or {})
        if isinstance(program, Plan):
            if fetch_list is not None and [_fetch_name(f) for f in fetch_list] != program.fetch_names:
                raise ValueError("a Plan fetches %s; run it without fetch_list or prepare "
                                 "another" % program.fetch_names)
            self._last_program = program.program
            return self._exe.run_plan(program._h, program.program._h, feed, scope,
                                      return_numpy)
        program = program or default_main_program()
        if not isinstance(program, Program):
            raise TypeError("run: program must be a tandem.Program, CompiledProgram or Plan, "
                            "got %r" % (program,))
        self._last_program = program
        fetches = [_fetch_name(f) for f in (fetch_list or [])]
        return self._exe.run(program._h, feed, fetches, scope, bool(return_numpy),
                             bool(use_program_cache))

    @property
    def last_run_stats(self):
        """RunStats of the last run: ops, copies and bytes per direction, sync and async
        copies, fetch copies and the per-copy ledger ([CopyRecord])."""
        return self._exe.last_run_stats

    @property
    def last_plan(self):
        """The Plan of the last run (placement table, copies), or None."""
        handle = self._exe.last_plan
        return None if handle is None else Plan(handle, self._last_program)

    def placement_table(self, program=None, feed_names=(), fetch_list=(), scope=None):
        """The placement table of ``program`` as text."""
        return self.prepare(program, feed_names, fetch_list, scope).placement_table_string()

    def clear_cache(self):
        """Forgets prepared plans."""
        self._exe.clear_cache()

    def close(self):
        self.clear_cache()
