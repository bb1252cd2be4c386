"""GAN objectives and regularisers as small pure functions of logits (shape [B]).

Each D loss is a batch mean of the per-sample loss; each G loss likewise.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.nn.functional as F

LOSSES = ("nonsaturating", "hinge", "wgan_gp", "lsgan")


def d_nonsaturating(real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
    return (F.softplus(-real_logits) + F.softplus(fake_logits)).mean()  # -log s(D(x)) - log(1 - s(D(G(z))))


def g_nonsaturating(fake_logits: torch.Tensor) -> torch.Tensor:
    return F.softplus(-fake_logits).mean()  # -log s(D(G(z)))


def d_hinge(real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
    return (F.relu(1.0 - real_logits) + F.relu(1.0 + fake_logits)).mean()  # max(0, 1 - D(x)) + max(0, 1 + D(G(z)))


def g_hinge(fake_logits: torch.Tensor) -> torch.Tensor:
    return -fake_logits.mean()


def d_wasserstein(real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
    return fake_logits.mean() - real_logits.mean()  # critic: E[D(G(z))] - E[D(x)]


def g_wasserstein(fake_logits: torch.Tensor) -> torch.Tensor:
    return -fake_logits.mean()


def d_lsgan(real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
    return 0.5 * ((real_logits - 1.0).pow(2) + fake_logits.pow(2)).mean()  # (D(x) - 1)^2/2 + D(G(z))^2/2


def g_lsgan(fake_logits: torch.Tensor) -> torch.Tensor:
    return 0.5 * (fake_logits - 1.0).pow(2).mean()


D_LOSSES = {"nonsaturating": d_nonsaturating, "hinge": d_hinge, "wgan_gp": d_wasserstein, "lsgan": d_lsgan}
G_LOSSES = {"nonsaturating": g_nonsaturating, "hinge": g_hinge, "wgan_gp": g_wasserstein, "lsgan": g_lsgan}


def input_gradients(outputs: torch.Tensor, inputs: torch.Tensor, scaler=None) -> torch.Tensor:
    """d(sum outputs)/d inputs with a graph (so the penalty itself can be backpropagated).

    Under fp16 the outputs are scaled before ``autograd.grad`` and the gradients unscaled after,
    as in PyTorch's AMP gradient-penalty recipe: unscaled fp16 gradients of the penalty would underflow.
    """
    total = outputs.sum()
    if scaler is not None:
        total = scaler.scale(total)
    (grad,) = torch.autograd.grad(total, inputs, create_graph=True)
    if scaler is not None:
        grad = grad / scaler.get_scale()
    return grad


def gradient_penalty(
    D: Callable,
    real: torch.Tensor,
    fake: torch.Tensor,
    alpha: torch.Tensor,
    labels: Optional[torch.Tensor] = None,
    scaler=None,
) -> torch.Tensor:
    """WGAN-GP (Gulrajani et al. 2017): E[(||grad_x D(x_hat)||_2 - 1)^2], x_hat = a*real + (1-a)*fake.

    ``alpha`` has shape [B, 1, 1, 1] (drawn by the caller so the function stays pure).
    """
    x_hat = (alpha * real.detach() + (1.0 - alpha) * fake.detach()).requires_grad_(True)
    grad = input_gradients(D(x_hat, labels), x_hat, scaler)
    return (grad.flatten(1).norm(2, dim=1) - 1.0).pow(2).mean()


def r1_penalty(D: Callable, real: torch.Tensor, labels: Optional[torch.Tensor] = None, scaler=None) -> torch.Tensor:
    """R1 (Mescheder et al. 2018): E[||grad_x D(x)||^2] on real data; the caller weights it by gamma/2."""
    x = real.detach().requires_grad_(True)
    grad = input_gradients(D(x, labels), x, scaler)
    return grad.flatten(1).pow(2).sum(1).mean()
