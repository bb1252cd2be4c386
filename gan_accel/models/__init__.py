"""Generator/discriminator architectures, built by name from the config; export and loading
of a generator live in :mod:`.export`."""

from __future__ import annotations

from typing import Tuple

import torch.nn as nn

from .dcgan import DCGAN_SIZES, DCGANDiscriminator, DCGANGenerator
from .export import load_generator, save_generator
from .fastgan import FASTGAN_SIZES, FastGANDiscriminator, FastGANGenerator
from .layers import D_NORMS, G_NORMS
from .resnet import RESNET_SIZES, ResNetDiscriminator, ResNetGenerator

ARCHS = {
    "dcgan": (DCGANGenerator, DCGANDiscriminator, DCGAN_SIZES),
    "resnet": (ResNetGenerator, ResNetDiscriminator, RESNET_SIZES),
    "fastgan": (FastGANGenerator, FastGANDiscriminator, FASTGAN_SIZES),
}


def supported_sizes(arch: str) -> tuple:
    return ARCHS[arch][2]


def build_models(
    arch: str,
    *,
    z_dim: int,
    channels: int,
    image_size: int,
    g_channels: int,
    d_channels: int,
    d_norm: str,
    num_classes: int = 0,
    g_norm: str = "batch",
    progressive: bool = False,
) -> Tuple[nn.Module, nn.Module]:
    """``progressive``: DCGAN only, half-size heads for a progressive run (see :mod:`.dcgan`)."""
    G_cls, D_cls, _ = ARCHS[arch]
    extra = {"progressive": True} if progressive else {}
    G = G_cls(
        z_dim=z_dim,
        channels=channels,
        image_size=image_size,
        g_channels=g_channels,
        num_classes=num_classes,
        g_norm=g_norm,
        **extra,
    )
    D = D_cls(
        channels=channels,
        image_size=image_size,
        d_channels=d_channels,
        d_norm=d_norm,
        num_classes=num_classes,
        **extra,
    )
    return G, D


__all__ = ["ARCHS", "D_NORMS", "G_NORMS", "build_models", "load_generator", "save_generator", "supported_sizes"]
