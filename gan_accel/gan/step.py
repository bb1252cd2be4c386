"""The two phases of a GAN update as loss functions: each returns ``(loss, metrics)`` with the
metrics as detached device tensors; the engine runs the backward and the updates.

The engine runs them D first, then G (D backward -> D step -> G backward -> G step): under fp16
one GradScaler serves every optimizer and each ``optimizer.step()`` updates it, so "both
backwards, then both steps" would give the second update a mis-scaled gradient.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import torch

from .augment import Augment
from .losses import D_LOSSES, G_LOSSES, gradient_penalty, r1_penalty

Metrics = Dict[str, torch.Tensor]


def d_loss(
    D,
    real: torch.Tensor,
    fake: torch.Tensor,
    labels: Optional[torch.Tensor],
    loss: str,
    gp_weight: float = 0.0,
    gp_alpha: Optional[torch.Tensor] = None,
    r1_weight: float = 0.0,
    augment: Optional[Augment] = None,
    scaler=None,
    recon_quadrants: Optional[torch.Tensor] = None,
    recon_weight: float = 0.0,
) -> Tuple[torch.Tensor, Metrics]:
    """D's loss on a real batch and a detached fake batch (G gets no gradient).

    ``augment`` (DiffAugment) is applied to every input D sees here, the GP/R1 inputs included:
    the penalties are gradients w.r.t. the un-augmented images, of the same augmented D that the
    loss trains (as StyleGAN2-ADA does). ``r1_weight`` is the full weight of this step's R1 term
    (gamma/2, times the interval when lazy); 0 skips it. ``scaler``: fp16's GradScaler, for the
    penalties' inner ``autograd.grad``. ``recon_quadrants``: for a D that reconstructs its real
    inputs (``--arch fastgan``), the quadrant of each real image to rebuild; its loss, weighted
    by ``recon_weight``, comes out of the same forward as the real logits.
    """
    fake = fake.detach()
    D_aug = D if augment is None else (lambda x, y=None, *q: D(augment(x), y, *q))
    recon = None
    if recon_quadrants is not None:
        real_logits, recon = D_aug(real, labels, recon_quadrants)
    else:
        real_logits = D_aug(real, labels)
    fake_logits = D_aug(fake, labels)
    d = D_LOSSES[loss](real_logits.float(), fake_logits.float())
    total = d
    metrics = {
        "loss/D": d.detach(),
        "D/real_logit": real_logits.detach().float().mean(),
        "D/fake_logit": fake_logits.detach().float().mean(),
        # ADA's overfitting signal r_t (gan_accel.gan.ada): the share of reals D calls real.
        "D/real_sign": real_logits.detach().float().sign().mean(),
    }
    if recon is not None:
        total = total + recon_weight * recon
        metrics["reg/recon"] = recon.detach()
    if gp_weight > 0:
        gp = gradient_penalty(D_aug, real, fake, gp_alpha, labels, scaler)
        total = total + gp_weight * gp
        metrics["reg/gp"] = gp.detach()
    if r1_weight > 0:
        r1 = r1_penalty(D_aug, real, labels, scaler)
        total = total + r1_weight * r1
        metrics["reg/r1"] = r1.detach()
    return total, metrics


def g_loss(
    D, fake: torch.Tensor, labels: Optional[torch.Tensor], loss: str, augment: Optional[Augment] = None
) -> Tuple[torch.Tensor, Metrics]:
    """G's loss through D. The recipe declares D frozen for this phase: without the freeze, G's
    loss would write gradients into D's parameters, which accumulation would add to D's next
    update. DiffAugment here too: G is judged on the same augmented view D was trained on."""
    g = G_LOSSES[loss](D(augment(fake) if augment is not None else fake, labels).float())
    return g, {"loss/G": g.detach()}
