"""DCGAN generator and discriminator (Radford et al. 2015) for square power-of-two images.

Both take optional class labels so the conditional variants share the interface:
``G(z, labels=None) -> [B, C, S, S] in [-1, 1]`` and ``D(x, labels=None) -> logits [B]``.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
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


def fade(half: torch.Tensor, full: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """``lerp(half, full, alpha)`` in the images' dtype (autocast may make them bf16)."""
    return torch.lerp(half, full, alpha.to(half.dtype))


def upsample(images: torch.Tensor) -> torch.Tensor:
    # Nearest: area-downsampling its output gives the half image back exactly, so in stage 1 D
    # compares G's half images with area-downsampled reals, both unblurred (ProGAN fades the same way).
    return F.interpolate(images, scale_factor=2, mode="nearest")


def downsample(images: torch.Tensor) -> torch.Tensor:
    return F.avg_pool2d(images, 2)  # area: each half-size pixel is the mean of its 2x2 block


class DCGANGenerator(nn.Module, PyTorchModelHubMixin):
    """``progressive``: a second output head ``to_rgb_half`` draws a half-size image from the
    features one block before the last (ProGAN, Karras et al. 2018). ``alpha`` (a buffer, so
    checkpoints and exports keep it) blends ``upsample(half) -> full``; at 0 only the half path
    runs (about half the cost), at 1 only the full one. The output is full-size at every alpha."""

    arch = "dcgan"

    def __init__(
        self,
        z_dim: int = 128,
        channels: int = 1,
        image_size: int = 32,
        g_channels: int = 64,
        num_classes: int = 0,
        g_norm: str = "batch",
        progressive: bool = False,
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
        for i in range(n_up - 1):
            if i == n_up - 2:
                self.split, half_width = len(layers), width  # the features before the last block
            layers += [
                nn.ConvTranspose2d(width, width // 2, 4, 2, 1, bias=not bn),
                *g_norm_layer(g_norm, width // 2),
                nn.ReLU(True),
            ]
            width //= 2
        layers += [nn.ConvTranspose2d(width, channels, 4, 2, 1), nn.Tanh()]
        self.net = nn.Sequential(*layers)
        self.progressive = progressive
        if progressive:  # nothing added otherwise: checkpoints and exports stay as they were
            self.to_rgb_half = nn.Sequential(nn.ConvTranspose2d(half_width, channels, 4, 2, 1), nn.Tanh())
            self.register_buffer("alpha", torch.zeros(()))
        dcgan_init(self)

    def forward(self, z: torch.Tensor, labels: Optional[torch.Tensor] = None) -> torch.Tensor:
        h = conditional_input(z, labels, self.embed)[:, :, None, None]  # [B, z] -> [B, z, 1, 1]
        if not self.progressive:
            return self.net(h)  # [B, C, S, S]
        alpha = float(self.alpha)
        if alpha >= 1.0:
            return self.net(h)
        h = self.net[: self.split](h)  # [B, 2 * g_channels, S/4, S/4]
        half = upsample(self.to_rgb_half(h))  # [B, C, S/2, S/2] -> [B, C, S, S]
        if alpha <= 0.0:
            return half
        return fade(half, self.net[self.split :](h), self.alpha)


class DCGANDiscriminator(nn.Module):
    """``progressive``: the mirror of the generator's: a ``from_rgb_half`` stem takes the
    area-downsampled input into the stack one block later; ``alpha`` blends its features with
    those of the full-size stem and first block, before the rest of the stack (ProGAN)."""

    def __init__(
        self,
        channels: int = 1,
        image_size: int = 32,
        d_channels: int = 64,
        d_norm: str = "batch",
        num_classes: int = 0,
        progressive: bool = False,
    ) -> None:
        super().__init__()
        n_down = _num_up(image_size)
        width = d_channels
        # No normalisation on the first layer (DCGAN), LeakyReLU(0.2) throughout.
        layers = [maybe_spectral(nn.Conv2d(channels, width, 4, 2, 1), d_norm), nn.LeakyReLU(0.2, True)]
        for i in range(n_down - 1):
            layers += [
                maybe_spectral(nn.Conv2d(width, width * 2, 4, 2, 1, bias=d_norm != "batch"), d_norm),
                *d_norm_layer(d_norm, width * 2),
                nn.LeakyReLU(0.2, True),
            ]
            width *= 2
            if i == 0:
                self.split, half_width = len(layers), width  # where a half-size input enters
        self.features = nn.Sequential(*layers)  # [B, width, 4, 4]
        self.head = ProjectionHead(width * 16, num_classes, d_norm)
        self.progressive = progressive
        if progressive:
            conv = maybe_spectral(nn.Conv2d(channels, half_width, 4, 2, 1), d_norm)
            self.from_rgb_half = nn.Sequential(conv, nn.LeakyReLU(0.2, True))
            self.register_buffer("alpha", torch.zeros(()))
        dcgan_init(self)

    def forward(self, x: torch.Tensor, labels: Optional[torch.Tensor] = None) -> torch.Tensor:
        return self.head(self.trunk(x).flatten(1), labels)

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        alpha = float(self.alpha) if self.progressive else 1.0
        if alpha >= 1.0:
            return self.features(x)
        h = self.from_rgb_half(downsample(x))  # [B, C, S, S] -> [B, C, S/2, S/2] -> [B, 2 * d_channels, S/4, S/4]
        if alpha > 0.0:
            h = fade(h, self.features[: self.split](x), self.alpha)
        return self.features[self.split :](h)
