"""Small building blocks shared by the architectures."""

from __future__ import annotations

from typing import List, Optional

import torch
import torch.nn as nn
from torch.nn.utils.parametrizations import spectral_norm

D_NORMS = ("batch", "none", "spectral")
G_NORMS = ("batch", "none")


def maybe_spectral(layer: nn.Module, d_norm: str) -> nn.Module:
    return spectral_norm(layer) if d_norm == "spectral" else layer


def d_norm_layer(d_norm: str, channels: int) -> List[nn.Module]:
    return [nn.BatchNorm2d(channels)] if d_norm == "batch" else []


def g_norm_layer(g_norm: str, channels: int) -> List[nn.Module]:
    return [nn.BatchNorm2d(channels)] if g_norm == "batch" else []


def conditional_input(z: torch.Tensor, labels: Optional[torch.Tensor], embed: Optional[nn.Embedding]) -> torch.Tensor:
    if embed is None:
        return z
    if labels is None:
        raise ValueError("this generator is class-conditional: pass labels")
    return torch.cat([z, embed(labels)], dim=1)


class ProjectionHead(nn.Module):
    """Linear logit plus, when conditional, the projection term <embed(y), phi(x)> (Miyato &
    Koyama 2018): ``logits = w^T phi(x) + b + embed(y)^T phi(x)``, shape [B]."""

    def __init__(self, features: int, num_classes: int, d_norm: str) -> None:
        super().__init__()
        self.linear = maybe_spectral(nn.Linear(features, 1), d_norm)
        self.embed = maybe_spectral(nn.Embedding(num_classes, features), d_norm) if num_classes else None

    def forward(self, phi: torch.Tensor, labels: Optional[torch.Tensor] = None) -> torch.Tensor:
        out = self.linear(phi).squeeze(1)
        if self.embed is not None:
            if labels is None:
                raise ValueError("this discriminator is class-conditional: pass labels")
            out = out + (self.embed(labels) * phi).sum(1)
        return out
