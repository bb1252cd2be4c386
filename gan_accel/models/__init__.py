"""Generator/discriminator architectures, built by name from the config, and the export loader."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Tuple

import torch.nn as nn

from ..errors import UserError
from ..loop.atomic import atomic_folder
from .dcgan import DCGAN_SIZES, DCGANDiscriminator, DCGANGenerator
from .layers import D_NORMS, G_NORMS
from .resnet import RESNET_SIZES, ResNetDiscriminator, ResNetGenerator

ARCHS = {"dcgan": (DCGANGenerator, DCGANDiscriminator, DCGAN_SIZES),
         "resnet": (ResNetGenerator, ResNetDiscriminator, RESNET_SIZES)}


def supported_sizes(arch: str) -> tuple:
    return ARCHS[arch][2]


def build_models(arch: str, *, z_dim: int, channels: int, image_size: int, g_channels: int, d_channels: int,
                 d_norm: str, num_classes: int = 0, g_norm: str = "batch") -> Tuple[nn.Module, nn.Module]:
    G_cls, D_cls, _ = ARCHS[arch]
    G = G_cls(z_dim=z_dim, channels=channels, image_size=image_size, g_channels=g_channels, num_classes=num_classes,
              g_norm=g_norm)
    D = D_cls(channels=channels, image_size=image_size, d_channels=d_channels, d_norm=d_norm, num_classes=num_classes)
    return G, D


def save_generator(G: nn.Module, path: Path) -> None:
    """Safetensors weights + ``config.json`` (init arguments and ``arch``), loadable by
    :func:`load_generator` without any training config; written atomically (the same swap as
    checkpoints), so ``path`` always holds one complete generator."""
    config = dict(getattr(G, "_hub_mixin_config", None) or {})
    config["arch"] = G.arch
    with atomic_folder(Path(path)) as tmp:
        G.save_pretrained(str(tmp), config=config)


def load_generator(path) -> nn.Module:
    path = Path(path)
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise UserError(f"--generator {path}: not an exported generator folder (no config.json); "
                        "pass OUTPUT_DIR/generator from a training run")
    try:
        arch = json.loads(cfg_file.read_text()).get("arch", "dcgan")
    except json.JSONDecodeError as err:
        raise UserError(f"--generator {path}: config.json is not valid JSON ({err})") from None
    if arch not in ARCHS:
        raise UserError(f"--generator {path}: unknown arch {arch!r}")
    G = ARCHS[arch][0].from_pretrained(str(path))
    return G.eval().requires_grad_(False)


__all__ = ["ARCHS", "D_NORMS", "G_NORMS", "build_models", "load_generator", "save_generator", "supported_sizes"]
