"""Programs, variables and the guards that say where layers go.

    main, startup = tandem.Program(), tandem.Program()
    with tandem.program_guard(main, startup):
        x = tandem.data("x", shape=[-1, 4], dtype="float32")
        with tandem.device_guard("cpu"):        # ops built here run on the CPU
            h = tandem.layers.fc(x, size=8)
        y = tandem.layers.mean(h)
    print(main)                                 # one line per op, with its place

As in PaddlePaddle's static graph, layers are appended to the current main
program (``default_main_program()`` outside any ``program_guard``) and the
initialisation of the parameters they create to the current startup
program. ``device_guard`` and ``transfer_policy`` stamp every op built
inside them; guards nest and the innermost wins. Programs, guards and
layers are not thread-safe: build on one thread.
"""

import contextlib
import threading

from tandem import _C

__all__ = [
    "Program", "Variable", "program_guard", "default_main_program", "default_startup_program",
    "device_guard", "transfer_policy", "data",
]


class Program:
    """A program: variables and ops. Build it with layers under ``program_guard``."""

    def __init__(self, _handle=None):
        self._h = _handle if _handle is not None else _C.Program()

    # Paddle's view of a program as blocks: Tandem programs have one.
    def global_block(self):
        return _Block(self)

    def block(self, index=0):
        if index != 0:
            raise IndexError("Tandem programs have one block (index 0), got %d" % index)
        return _Block(self)

    def list_vars(self):
        """Every variable, in creation order."""
        return [Variable(self, v["name"]) for v in self._h.vars()]

    def all_parameters(self):
        """The trainable parameters."""
        return [Variable(self, v["name"]) for v in self._h.vars() if v["is_parameter"]]

    def persistable_vars(self):
        """Names of the persistable variables (what checkpoints save), sorted."""
        return _C.persistable_vars(self._h)

    @property
    def ops(self):
        """The ops as dicts: type, inputs, outputs, attrs, op_device, role, transfer_policy."""
        return self._h.ops()

    @property
    def num_ops(self):
        return self._h.num_ops()

    def clone(self, for_test=False):
        """A copy; ``for_test`` keeps the forward ops only (no backward, loss-gradient or
        optimizer ops) with ``is_test`` set where an op has it, for evaluation."""
        return Program(self._h.clone(bool(for_test)))

    def to_json(self):
        return self._h.to_json()

    @staticmethod
    def from_json(text):
        return Program(_C.Program.from_json(text))

    def to_string(self, throw_on_error=False, with_details=False):
        return self._h.debug_string()

    def __str__(self):
        return self._h.debug_string()

    def __repr__(self):
        return "<tandem.Program with %d ops, %d variables>" % (self.num_ops, len(self._h.vars()))


class _Block:
    """Paddle's Block API over a Tandem program: var(name), vars, ops."""

    def __init__(self, program):
        self.program = program

    def var(self, name):
        if self.program._h.find_var(name) is None:
            raise ValueError("variable '%s' is not in the program" % name)
        return Variable(self.program, name)

    def has_var(self, name):
        return self.program._h.find_var(name) is not None

    @property
    def vars(self):
        return {v.name: v for v in self.program.list_vars()}

    @property
    def ops(self):
        return self.program.ops

    def all_parameters(self):
        return self.program.all_parameters()


class Variable:
    """A variable of a program, by name. Its dtype and shape are the program's
    declaration (-1 marks a dim known only when the program runs). Arithmetic
    with another Variable or a number appends elementwise or scale ops."""

    __slots__ = ("program", "name")

    def __init__(self, program, name):
        self.program = program
        self.name = name

    def _desc(self):
        d = self.program._h.find_var(self.name)
        if d is None:
            raise ValueError("variable '%s' is not in its program" % self.name)
        return d

    @property
    def shape(self):
        return tuple(self._desc()["shape"])

    @property
    def dtype(self):
        return self._desc()["dtype"]

    @property
    def persistable(self):
        return self._desc()["persistable"]

    @property
    def is_parameter(self):
        return self._desc()["is_parameter"]

    @property
    def stop_gradient(self):
        return self._desc()["stop_gradient"]

    @stop_gradient.setter
    def stop_gradient(self, value):
        self.program._h.set_stop_gradient(self.name, bool(value))

    def __repr__(self):
        d = self._desc()
        return "Variable(%s: %s%s%s)" % (self.name, d["dtype"], list(d["shape"]),
                                          ", persistable" if d["persistable"] else "")

    def __hash__(self):
        return hash((id(self.program), self.name))

    def __eq__(self, other):
        return (isinstance(other, Variable) and other.program is self.program and
                other.name == self.name)

    def _binary(self, other, op, reverse=False):
        from tandem import layers
        if isinstance(other, Variable):
            x, y = (other, self) if reverse else (self, other)
            return getattr(layers, "elementwise_" + op)(x, y)
        value = float(other)
        if op == "add":
            return layers.scale(self, 1.0, value)
        if op == "sub":
            return layers.scale(self, -1.0, value) if reverse else layers.scale(self, 1.0, -value)
        if op == "mul":
            return layers.scale(self, value)
        if reverse:
            raise TypeError("number / Variable is not supported; use layers.elementwise_div")
        return layers.scale(self, 1.0 / value)

    def __add__(self, o): return self._binary(o, "add")
    def __radd__(self, o): return self._binary(o, "add", True)
    def __sub__(self, o): return self._binary(o, "sub")
    def __rsub__(self, o): return self._binary(o, "sub", True)
    def __mul__(self, o): return self._binary(o, "mul")
    def __rmul__(self, o): return self._binary(o, "mul", True)
    def __truediv__(self, o): return self._binary(o, "div")
    def __rtruediv__(self, o): return self._binary(o, "div", True)


class _State(threading.local):
    def __init__(self):
        self.main = Program()
        self.startup = Program()
        self.devices = []
        self.policies = []


_state = _State()


def default_main_program():
    """The program layers append to outside any program_guard."""
    return _state.main


def default_startup_program():
    """The program parameter initialisation goes to outside any program_guard."""
    return _state.startup


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Layers inside append to ``main_program``, parameter initialisation to
    ``startup_program`` (default: the current startup program)."""
    if not isinstance(main_program, Program):
        raise TypeError("program_guard: main_program must be a tandem.Program, got %r" %
                        (main_program,))
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError("program_guard: startup_program must be a tandem.Program, got %r" %
                        (startup_program,))
    saved = (_state.main, _state.startup)
    _state.main = main_program
    if startup_program is not None:
        _state.startup = startup_program
    try:
        yield
    finally:
        _state.main, _state.startup = saved


@contextlib.contextmanager
def device_guard(device=None):
    """Ops built inside run on ``device``: "cpu", "gpu" (the executor's GPU),
    "gpu:N", "sim:N", or None / "" for the executor's default place. Place
    strings are exact (lower case, no whitespace, no leading zeros: README.md,
    "Place strings"); "GPU" or " cpu" raise ValueError. Their backward and
    optimizer ops follow them (docs/design.md, placement rules)."""
    device = "" if device is None else str(device)
    _C.layers.check_device(device)
    _state.devices.append(device)
    try:
        yield
    finally:
        _state.devices.pop()


@contextlib.contextmanager
def transfer_policy(policy):
    """Ops built inside take this transfer policy: "allow", "log" or "disallow"
    (a copy the placer needs for them is then an error naming the variable)."""
    if policy not in ("allow", "log", "disallow"):
        raise ValueError("transfer_policy must be 'allow', 'log' or 'disallow', got %r" %
                         (policy,))
    _state.policies.append(policy)
    try:
        yield
    finally:
        _state.policies.pop()


def current_device():
    """The device_guard in force ("" for none)."""
    return _state.devices[-1] if _state.devices else ""


def _target():
    """Where a layer builds now."""
    return _C.BuildTarget(_state.main._h, _state.startup._h, current_device(),
                          _state.policies[-1] if _state.policies else "")


def _var(name):
    return Variable(_state.main, name)


def _name(x, what):
    """The variable name of a layer input (a Variable, or a name)."""
    if isinstance(x, Variable):
        if x.program is not _state.main:
            raise ValueError("%s: variable '%s' belongs to another program than the one being "
                             "built (check program_guard)" % (what, x.name))
        return x.name
    if isinstance(x, str):
        return x
    raise TypeError("%s must be a tandem Variable, got %r" % (what, x))


def _dtype(dtype):
    """"float32" for "float32", numpy.float32, numpy.dtype("float32")."""
    if isinstance(dtype, str):
        return dtype
    name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None)
    if name is None:
        raise TypeError("not a dtype: %r" % (dtype,))
    return str(name)


def data(name, shape, dtype="float32", lod_level=0):
    """A variable fed on every run with ``shape`` as given (-1 or None: any size)."""
    dims = [-1 if d is None else int(d) for d in shape]
    return _var(_C.layers.data(_target(), name, _dtype(dtype), dims))
