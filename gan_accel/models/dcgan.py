"""DCGAN generator and discriminator (Radford et al. 2015) for square power-of-two images.

Both take optional class labels so the conditional variants share the interface:
``G(z, labels=None) -> [B, C, S, S] in [-1, 1]`` and ``D(x, labels=None) -> logits [B]``.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn
from huggingface_hub import PyTorchModelHubMixin

from .layers import ProjectionHead, conditional_input, d_norm_layer, g_norm_layer, maybe_spectral

DCGAN_SIZES = (16, 32, 64, 128)


def _num_up(image_size: int) -> int:
    # The first layer makes 4x4, each block doubles: 4 * 2**n == image_size.
    return int(math.log2(image_size)) - 2


def dcgan_init(module: nn.Module) -> None:
    """DCGAN init: conv weights ~ N(0, 0.02); BN gamma ~ N(1, 0.02), beta = 0."""
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.normal_(m.weight, 1.0, 0.02)
            nn.init.zeros_(m.bias)


class DCGANGenerator(nn.Module, PyTorchModelHubMixin):
    arch = "dcgan"

    def __init__(
        self,
        z_dim: int = 128,
        channels: int = 1,
        image_size: int = 32,
        g_channels: int = 64,
        num_classes: int = 0,
        g_norm: str = "batch",
    ) -> None:
        super().__init__()
        self.z_dim = z_dim
        self.channels = channels
        self.image_size = image_size
        self.num_classes = num_classes
        n_up = _num_up(image_size)
        width = g_channels * 2 ** (n_up - 1)
        # Conditional: a learned class embedding concatenated to z (the input of the first layer).
        self.embed = nn.Embedding(num_classes, z_dim) if num_classes else None
        in_dim = z_dim * 2 if num_classes else z_dim
        # g_norm="none": per-rank BatchNorm statistics (each rank normalises its own shard) are the
        # one thing that makes a DDP run differ from one process on the same global batch.
        bn = g_norm == "batch"
        layers = [nn.ConvTranspose2d(in_dim, width, 4, 1, 0, bias=not bn), *g_norm_layer(g_norm, width), nn.ReLU(True)]
        for _ in range(n_up - 1):
            layers += [
                nn.ConvTranspose2d(width, width // 2, 4, 2, 1, bias=not bn),
                *g_norm_layer(g_norm, width // 2),
                nn.ReLU(True),
            ]
            width //= 2
        layers += [nn.ConvTranspose2d(width, channels, 4, 2, 1), nn.Tanh()]
        self.net = nn.Sequential(*layers)
        dcgan_init(self)

    def forward(self, z: torch.Tensor, labels: Optional[torch.Tensor] = None) -> torch.Tensor:
        h = conditional_input(z, labels, self.embed)
        return self.net(h[:, :, None, None])  # [B, z] -> [B, z, 1, 1] -> [B, C, S, S]


class DCGANDiscriminator(nn.Module):
    def __init__(
        self,
        channels: int = 1,
        image_size: int = 32,
        d_channels: int = 64,
        d_norm: str = "batch",
        num_classes: int = 0,
    ) -> None:
        super().__init__()
        n_down = _num_up(image_size)
        width = d_channels
        # No normalisation on the first layer (DCGAN), LeakyReLU(0.2) throughout.
        layers = [maybe_spectral(nn.Conv2d(channels, width, 4, 2, 1), d_norm), nn.LeakyReLU(0.2, True)]
        for _ in range(n_down - 1):
            layers += [
                maybe_spectral(nn.Conv2d(width, width * 2, 4, 2, 1, bias=d_norm != "batch"), d_norm),
                *d_norm_layer(d_norm, width * 2),
                nn.LeakyReLU(0.2, True),
            ]
            width *= 2
        self.features = nn.Sequential(*layers)  # [B, width, 4, 4]
        self.head = ProjectionHead(width * 16, num_classes, d_norm)
        dcgan_init(self)

    def forward(self, x: torch.Tensor, labels: Optional[torch.Tensor] = None) -> torch.Tensor:
        return self.head(self.features(x).flatten(1), labels)
