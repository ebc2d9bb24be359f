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
    def __init__(self, learning_rate, grad_clip=None):
        self._lr = float(learning_rate)
        self._made = None
        self._program = None
        self._scaling = None
        self._clip = None
        if grad_clip is not None:
            from tandem.clip import GradientClipByGlobalNorm
            if not isinstance(grad_clip, GradientClipByGlobalNorm):
                raise ValueError("grad_clip: only tandem.clip.GradientClipByGlobalNorm is "
                                 "supported, got %r" % (grad_clip,))
            self.enable_gradient_clipping(grad_clip.clip_norm)

    def enable_gradient_clipping(self, max_norm):
        """Clips the gradients by their global norm (PyTorch's clip_grad_norm_,
        Paddle's GradientClipByGlobalNorm): every gradient is multiplied by
        min(1, max_norm / (norm + 1e-6)) before the updates. Call before
        minimize; global_norm_var then holds each step's norm."""
        self._clip = float(max_norm)
        return self

    @property
    def global_norm_var(self):
        """The float32 [1] Variable of the step's global gradient norm (after
        minimize, with clipping on)."""
        self._check()
        if "global_norm" not in self._made:
            raise ValueError("gradient clipping is off: call enable_gradient_clipping first")
        return Variable(self._program, self._made["global_norm"])

    def _options(self):
        """What the bindings configure: None, or loss scaling and clipping."""
        if self._scaling is None and self._clip is None:
            return None
        return dict(self._scaling or {}, loss_scaling=self._scaling is not None,
                    max_grad_norm=self._clip)

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
        return _C.layers.minimize_sgd(target, loss, self._lr, self._options())


class Momentum(Optimizer):
    """velocity = momentum * velocity + grad; param -= lr * velocity (Nesterov:
    param -= lr * (grad + momentum * velocity))."""

    def __init__(self, learning_rate, momentum, use_nesterov=False, grad_clip=None):
        super().__init__(learning_rate, grad_clip)
        self._mu = float(momentum)
        self._nesterov = bool(use_nesterov)

    def _minimize(self, target, loss):
        return _C.layers.minimize_momentum(target, loss, self._lr, self._mu, self._nesterov,
                                           self._options())


class Adam(Optimizer):
    """Adam with bias correction; weight_decay is AdamW-style (decoupled) unless
    decoupled_weight_decay is False (then an L2 term on the gradient)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 weight_decay=0.0, decoupled_weight_decay=True, grad_clip=None):
        super().__init__(learning_rate, grad_clip)
        self._args = (float(beta1), float(beta2), float(epsilon), float(weight_decay),
                      bool(decoupled_weight_decay))

    def _minimize(self, target, loss):
        return _C.layers.minimize_adam(target, loss, self._lr, *self._args, self._options())


SGDOptimizer = SGD
MomentumOptimizer = Momentum
AdamOptimizer = Adam
