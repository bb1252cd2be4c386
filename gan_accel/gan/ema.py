"""Exponential moving average of G, kept outside ``prepare``: it never trains, and DDP refuses to wrap a
module without trainable parameters ("DistributedDataParallel is not needed...")."""

from __future__ import annotations

import copy
from pathlib import Path

import torch
import torch.nn as nn
from safetensors.torch import load_file, save_file

EMA_FILE = "ema.safetensors"


class EMA:
    """``ema = decay * ema + (1 - decay) * G`` after each G update from ``start_step`` on; before
    it, a plain copy. With ``warmup``, the decay ramps as ``min(decay, (1 + t) / (10 + t))`` so
    early averages do not drag the random init along."""

    def __init__(self, model: nn.Module, decay: float, start_step: int = 0, warmup: bool = True) -> None:
        self.module = copy.deepcopy(model).eval().requires_grad_(False)
        self.decay = decay
        self.start_step = start_step
        self.warmup = warmup

    def current_decay(self, step: int) -> float:
        if step < self.start_step or self.decay == 0:
            return 0.0
        t = step - self.start_step
        return min(self.decay, (1 + t) / (10 + t)) if self.warmup else self.decay

    @torch.no_grad()
    def update(self, model: nn.Module, step: int) -> None:
        decay = self.current_decay(step)
        ema_p = list(self.module.parameters())
        model_p = [p.detach() for p in model.parameters()]
        if decay == 0.0:
            torch._foreach_copy_(ema_p, model_p)
        else:
            torch._foreach_lerp_(ema_p, model_p, 1.0 - decay)
        # BN running statistics are not averaged: they are recomputed for the EMA weights before
        # use (recalibrate_batchnorm); copying keeps them sensible in between.
        for b_ema, b in zip(self.module.buffers(), model.buffers()):
            b_ema.copy_(b)

    def state_dict(self) -> dict:
        return self.module.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.module.load_state_dict(state)

    def save(self, folder: Path) -> None:
        save_file(
            {k: v.detach().contiguous().cpu() for k, v in self.module.state_dict().items()},
            str(Path(folder) / EMA_FILE),
        )

    def load(self, folder: Path) -> None:
        state = load_file(str(Path(folder) / EMA_FILE))
        self.module.load_state_dict(state)


@torch.no_grad()
def recalibrate_batchnorm(
    G: nn.Module, z_dim: int, num_classes: int, device, batches: int = 8, batch_size: int = 128, seed: int = 0
) -> None:
    """Recompute BN running statistics for G's *current* weights (the EMA weights differ from the
    ones the training statistics were collected with). No-op for a G without BatchNorm."""
    bns = [m for m in G.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    saved = [(m.momentum,) for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the calibration batches
    g = torch.Generator(device="cpu").manual_seed(seed)
    G.train()
    for _ in range(batches):
        z = torch.randn(batch_size, z_dim, generator=g).to(device)
        labels = torch.randint(0, num_classes, (batch_size,), generator=g).to(device) if num_classes else None
        G(z, labels)
    G.eval()
    for m, (momentum,) in zip(bns, saved):
        m.momentum = momentum
