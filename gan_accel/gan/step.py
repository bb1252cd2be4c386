"""The two phases of a GAN update, each one backward pass; metrics come back as device tensors.

Order matters under fp16: Accelerate has ONE GradScaler and every ``optimizer.step()`` updates
it, so D backward -> D step -> G backward -> G step (Accelerate notes #5).
"""
from __future__ import annotations

from typing import Dict, Optional

import torch

from ..loop.guard import grads_finite
from .augment import Augment
from .losses import D_LOSSES, G_LOSSES, gradient_penalty, r1_penalty

Metrics = Dict[str, torch.Tensor]


def d_step(accelerator, D, real: torch.Tensor, fake: torch.Tensor, labels: Optional[torch.Tensor], loss: str,
           gp_weight: float = 0.0, gp_alpha: Optional[torch.Tensor] = None, r1_weight: float = 0.0,
           augment: Optional[Augment] = None) -> Metrics:
    """Backward of D's loss on a real batch and a detached fake batch (G gets no gradient).

    ``augment`` (DiffAugment) is applied to every input D sees here, the GP/R1 inputs included:
    the penalties are gradients w.r.t. the un-augmented images, of the same augmented D that the
    loss trains (as StyleGAN2-ADA does). ``r1_weight`` is the full weight of this step's R1 term
    (gamma/2, times the interval when lazy); 0 skips it.
    """
    fake = fake.detach()
    D_aug = D if augment is None else (lambda x, y=None: D(augment(x), y))
    with accelerator.autocast():
        real_logits = D_aug(real, labels)
        fake_logits = D_aug(fake, labels)
        d_loss = D_LOSSES[loss](real_logits.float(), fake_logits.float())
    total = d_loss
    metrics = {"loss/D": d_loss.detach(), "D/real_logit": real_logits.detach().float().mean(),
               "D/fake_logit": fake_logits.detach().float().mean()}
    scaler = accelerator.scaler
    if gp_weight > 0:
        gp = gradient_penalty(D_aug, real, fake, gp_alpha, labels, scaler)
        total = total + gp_weight * gp
        metrics["reg/gp"] = gp.detach()
    if r1_weight > 0:
        r1 = r1_penalty(D_aug, real, labels, scaler)
        total = total + r1_weight * r1
        metrics["reg/r1"] = r1.detach()
    accelerator.backward(total)
    return metrics


def g_step(accelerator, D, fake: torch.Tensor, labels: Optional[torch.Tensor], loss: str,
           augment: Optional[Augment] = None) -> Metrics:
    """Backward of G's loss through a frozen D.

    Without the freeze, G's loss would write gradients into D's parameters, which accumulation
    would add to D's next update (Accelerate notes #3). Freezing ALL of D is DDP-safe; the
    gradient still flows through D's activations to G.
    """
    D.requires_grad_(False)
    try:
        with accelerator.autocast():
            # DiffAugment here too: G must be judged on the same augmented view D was trained on.
            g_loss = G_LOSSES[loss](D(augment(fake) if augment is not None else fake, labels).float())
        accelerator.backward(g_loss)
    finally:
        D.requires_grad_(True)
    return {"loss/G": g_loss.detach()}


def apply_update(accelerator, optimizer, scheduler, module, check_finite: bool,
                 finite: Optional[torch.Tensor] = None) -> Optional[torch.Tensor]:
    """Step ``optimizer`` and its scheduler on a sync step; skip the update if its gradients are
    not finite (checked after DDP's all-reduce, so every rank agrees).

    Returns None on accumulation micro-steps (prepared optimizers ignore step()/zero_grad()
    then), else a 0-dim bool tensor on the device: were the gradients finite. With a fused
    optimizer the skip happens on the device (the ``found_inf`` input GradScaler also uses: the
    kernel leaves weights, moments and step count untouched), so there is no host sync here;
    other optimizers need one ``bool()``. Under fp16 the GradScaler does this itself.
    ``finite``: the verdict when the caller already has it (e.g. agreed across ranks).
    """
    if not accelerator.sync_gradients:
        return None
    if check_finite and finite is None:
        finite = grads_finite(module)
    elif not check_finite:
        finite = None
    raw = optimizer.optimizer
    if finite is not None and raw.defaults.get("fused"):
        raw.found_inf = (~finite).float()
        optimizer.step()
        raw.found_inf = None
    elif finite is not None and not bool(finite):
        optimizer.zero_grad(set_to_none=True)
        return finite
    else:
        optimizer.step()
    scheduler.step()  # also on a device-side skip: the schedule follows updates attempted
    optimizer.zero_grad(set_to_none=True)
    return finite if finite is not None else torch.ones((), dtype=torch.bool, device=accelerator.device)


def make_adam(params, lr: float, betas) -> torch.optim.Adam:
    """Fused Adam where the device has the kernel (CPU and CUDA do): one kernel for all tensors,
    and it can skip a non-finite update without a host sync (see :func:`apply_update`)."""
    try:
        return torch.optim.Adam(params, lr=lr, betas=betas, fused=True)
    except (RuntimeError, ValueError):
        return torch.optim.Adam(params, lr=lr, betas=betas, foreach=True)
