"""The CycleGAN objective as small pure functions (Zhu et al. 2017, Eq. 1-3 and 7.1).

Adversarial terms take D's patch logits (any shape: every patch is a sample) and return batch
means. LSGAN is the paper's choice; ``nonsaturating`` and ``hinge`` reuse the GAN path's losses.
"""

from __future__ import annotations

from typing import Callable, Dict

import torch
import torch.nn.functional as F

from ..gan.losses import d_hinge, d_nonsaturating, g_hinge, g_nonsaturating

ADVERSARIAL_LOSSES = ("lsgan", "nonsaturating", "hinge")


def d_lsgan(real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
    return (real_logits - 1.0).pow(2).mean() + fake_logits.pow(2).mean()  # (D(y) - 1)^2 + D(G(x))^2


def g_lsgan(fake_logits: torch.Tensor) -> torch.Tensor:
    return (fake_logits - 1.0).pow(2).mean()  # (D(G(x)) - 1)^2


D_ADVERSARIAL: Dict[str, Callable] = {"lsgan": d_lsgan, "nonsaturating": d_nonsaturating, "hinge": d_hinge}
G_ADVERSARIAL: Dict[str, Callable] = {"lsgan": g_lsgan, "nonsaturating": g_nonsaturating, "hinge": g_hinge}


def discriminator_loss(loss: str, real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
    """Halved, as in the paper (7.1): "we divide the objective by 2 while optimizing D, which slows
    down the rate at which D learns relative to G"."""
    return 0.5 * D_ADVERSARIAL[loss](real_logits, fake_logits)


def generator_adversarial_loss(loss: str, fake_logits: torch.Tensor) -> torch.Tensor:
    return G_ADVERSARIAL[loss](fake_logits)


def cycle_loss(real: torch.Tensor, reconstructed: torch.Tensor, weight: float) -> torch.Tensor:
    return weight * F.l1_loss(reconstructed, real)  # lambda * ||F(G(x)) - x||_1


def identity_loss(real: torch.Tensor, same: torch.Tensor, weight: float) -> torch.Tensor:
    """``weight * ||G_into_X(x) - x||_1``: a generator fed an image of its own output domain
    should leave it alone (the paper's L_identity, which keeps colours on photo<->painting)."""
    return weight * F.l1_loss(same, real)
