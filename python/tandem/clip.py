"""Gradient clipping, as Paddle 1.8 spells it:

    opt = tandem.optimizer.Adam(1e-3, grad_clip=tandem.clip.GradientClipByGlobalNorm(1.0))

The optimizer then multiplies every gradient by min(1, clip_norm / (global
norm + 1e-6)) before its update (Optimizer.enable_gradient_clipping).
"""

__all__ = ["GradientClipByGlobalNorm"]


class GradientClipByGlobalNorm:
    """Clips the gradients by their global L2 norm at ``clip_norm`` (> 0)."""

    def __init__(self, clip_norm):
        self.clip_norm = float(clip_norm)

    def __repr__(self):
        return "GradientClipByGlobalNorm(clip_norm=%g)" % self.clip_norm
