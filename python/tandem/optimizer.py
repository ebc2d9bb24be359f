"""Optimizers: ``opt.minimize(loss)`` appends the backward ops of ``loss``, a
learning-rate variable and one update op per trainable parameter.

    opt = tandem.optimizer.Adam(learning_rate=1e-3)
    opt.minimize(loss)
    ...
    opt.set_lr(5e-4)                  # between runs, in the global scope

Each update op runs where its parameter lives (a table under
device_guard("cpu") is updated on the CPU); the learning rate lives on the
host and is read there, so no step copies it. Hyper-parameters are checked
by minimize (InvalidArgumentError naming the op and the value).
"""

from tandem import _C
from tandem.framework import Variable, _name, _state, _target

__all__ = ["SGD", "Momentum", "Adam", "SGDOptimizer", "MomentumOptimizer", "AdamOptimizer"]


class Optimizer:
    def __init__(self, learning_rate):
        self._lr = float(learning_rate)
        self._made = None
        self._program = None
        self._scaling = None

    def enable_dynamic_loss_scaling(self, initial_scale=65536.0, growth_factor=2.0,
                                    backoff_factor=0.5, growth_interval=2000):
        """float16 training (tandem.amp.apply(main, "float16")): minimize then
        multiplies the loss by a scale, divides every gradient by it, skips a
        step whose gradients hold inf or NaN (nothing changes) and backs the
        scale off; growth_interval good steps in a row grow it. PyTorch
        GradScaler's defaults. Call before minimize."""
        self._scaling = {"initial_scale": float(initial_scale),
                         "growth_factor": float(growth_factor),
                         "backoff_factor": float(backoff_factor),
                         "growth_interval": int(growth_interval)}
        return self

    @property
    def loss_scaling_vars(self):
        """{"scale", "good_steps", "step_skipped"}: dynamic loss scaling's host
        variables after minimize (empty when it is off)."""
        self._check()
        return {k: Variable(self._program, v)
                for k, v in self._made.get("loss_scaling", {}).items()}

    def _minimize(self, target, loss):
        raise NotImplementedError

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """Returns (the update ops, [(parameter, gradient)]) as Paddle does."""
        if parameter_list is not None or no_grad_set:
            raise ValueError("minimize trains every parameter on the path to the loss; "
                             "parameter_list and no_grad_set are not supported (set "
                             "stop_gradient on a variable instead)")
        from tandem.framework import program_guard
        program = loss.program if isinstance(loss, Variable) else _state.main
        with program_guard(program, startup_program):
            before = program.num_ops
            self._made = self._minimize(_target(), _name(loss, "loss"))
        self._program = program
        ops = program.ops[before:]
        updates = [op for op in ops if op["role"] == "optimize" and "Param" in op["inputs"]]
        pairs = [(Variable(program, op["inputs"]["Param"][0]),
                  Variable(program, op["inputs"]["Grad"][0])) for op in updates]
        return updates, pairs

    @property
    def learning_rate_var(self):
        """The learning-rate Variable (after minimize)."""
        self._check()
        return Variable(self._program, self._made["learning_rate"])

    def state_vars(self, param):
        """The optimizer's state variables of ``param`` by slot ("velocity";
        "moment1", "moment2", "beta1_pow", "beta2_pow")."""
        self._check()
        name = param.name if isinstance(param, Variable) else str(param)
        return {slot: Variable(self._program, var)
                for slot, var in self._made["state"].get(name, {}).items()}

    def set_lr(self, value, scope=None):
        """Sets the learning rate used by the next runs (a host float32 [1] variable)."""
        from tandem.executor import global_scope
        self._check()
        var = (scope or global_scope()).find_var(self._made["learning_rate"])
        if var is None:
            raise ValueError("the learning rate '%s' is not in the scope: run the startup "
                             "program first" % self._made["learning_rate"])
        var.set([float(value)])

    def _check(self):
        if self._made is None:
            raise ValueError("call minimize first")


class SGD(Optimizer):
    """param -= lr * grad."""

    def _minimize(self, target, loss):
        return _C.layers.minimize_sgd(target, loss, self._lr, self._scaling)


class Momentum(Optimizer):
    """velocity = momentum * velocity + grad; param -= lr * velocity (Nesterov:
    param -= lr * (grad + momentum * velocity))."""

    def __init__(self, learning_rate, momentum, use_nesterov=False):
        super().__init__(learning_rate)
        self._mu = float(momentum)
        self._nesterov = bool(use_nesterov)

    def _minimize(self, target, loss):
        return _C.layers.minimize_momentum(target, loss, self._lr, self._mu, self._nesterov,
                                           self._scaling)


class Adam(Optimizer):
    """Adam with bias correction; weight_decay is AdamW-style (decoupled) unless
    decoupled_weight_decay is False (then an L2 term on the gradient)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 weight_decay=0.0, decoupled_weight_decay=True):
        super().__init__(learning_rate)
        self._args = (float(beta1), float(beta2), float(epsilon), float(weight_decay),
                      bool(decoupled_weight_decay))

    def _minimize(self, target, loss):
        return _C.layers.minimize_adam(target, loss, self._lr, *self._args, self._scaling)


SGDOptimizer = SGD
MomentumOptimizer = Momentum
AdamOptimizer = Adam
