"""Paddle 1.8's ``fluid.compiler`` names, so programs written for it run unchanged.

    import tandem as fluid
    import tandem.compiler as compiler

    compiled_prog = compiler.CompiledProgram(fluid.default_main_program())
    result = exe.run(program=compiled_prog, fetch_list=[out])

In Paddle a CompiledProgram turns a program into a graph for the
ParallelExecutor (passes, fusions, data parallelism). Tandem has no second
executor: ``Executor.run`` already plans a program once per (version, feeds,
fetches, scope) and reuses the plan, and places ops by device_guard and the
executor's place. So CompiledProgram is a documented pass-through: it holds
the program, ``exe.run`` runs that program exactly as it would run the
program itself, and its configuration methods (``with_data_parallel``,
``with_inference_optimize``) check their arguments' types and return self
without changing anything. BuildStrategy and ExecutionStrategy accept
Paddle's fields and are not read. Data parallelism is the C++ DataParallel
(parallel/, docs/design.md section 13); executor options are
``tandem.Executor(place, **options)``.
"""

from tandem.framework import Program

__all__ = ["CompiledProgram", "BuildStrategy", "ExecutionStrategy"]


class _Strategy:
    """Accepts any attribute Paddle's strategy has; Tandem reads none of them."""

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % kv for kv in sorted(vars(self).items())))


class BuildStrategy(_Strategy):
    """Paddle's graph-building options (fuse_*, reduce_strategy, ...): kept, not used."""


class ExecutionStrategy(_Strategy):
    """Paddle's ParallelExecutor options (num_threads, ...): kept, not used."""


class CompiledProgram:
    """``program_or_graph`` (a tandem.Program) for ``Executor.run``: a pass-through
    that runs the program as it is (module docstring). ``build_strategy`` is kept
    in ``.build_strategy`` and not used."""

    def __init__(self, program_or_graph, build_strategy=None):
        if isinstance(program_or_graph, CompiledProgram):
            program_or_graph = program_or_graph._program
        if not isinstance(program_or_graph, Program):
            raise TypeError("CompiledProgram: program_or_graph must be a tandem.Program, got %r"
                            % (program_or_graph,))
        if build_strategy is not None and not isinstance(build_strategy, BuildStrategy):
            raise TypeError("CompiledProgram: build_strategy must be a "
                            "tandem.compiler.BuildStrategy, got %r" % (build_strategy,))
        self._program = program_or_graph
        self.build_strategy = build_strategy
        self.exec_strategy = None

    @property
    def program(self):
        """The program ``Executor.run`` runs."""
        return self._program

    def with_data_parallel(self, loss_name=None, build_strategy=None, exec_strategy=None,
                           share_vars_from=None, places=None):
        """Returns self, unchanged in what it runs: Tandem runs the program on the
        executor's place, not replicated over ``places`` (the strategies are kept)."""
        if build_strategy is not None:
            if not isinstance(build_strategy, BuildStrategy):
                raise TypeError("with_data_parallel: build_strategy must be a BuildStrategy, "
                                "got %r" % (build_strategy,))
            self.build_strategy = build_strategy
        if exec_strategy is not None:
            if not isinstance(exec_strategy, ExecutionStrategy):
                raise TypeError("with_data_parallel: exec_strategy must be an "
                                "ExecutionStrategy, got %r" % (exec_strategy,))
            self.exec_strategy = exec_strategy
        if share_vars_from is not None and not isinstance(share_vars_from, CompiledProgram):
            raise TypeError("with_data_parallel: share_vars_from must be a CompiledProgram, "
                            "got %r" % (share_vars_from,))
        return self

    def with_inference_optimize(self, config):
        """Returns self, unchanged: Tandem has no inference passes."""
        return self

    def __repr__(self):
        return "<tandem.compiler.CompiledProgram of %r>" % (self._program,)
