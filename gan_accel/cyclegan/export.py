"""Exported translators: a ``save_pretrained`` folder per generator (``model.safetensors`` and
``config.json`` through PyTorchModelHubMixin), loadable without any training config."""
from __future__ import annotations

import json
from pathlib import Path

import torch.nn as nn

from ..errors import UserError
from ..loop.atomic import atomic_folder
from .models import ResnetGenerator


def save_translator(G: ResnetGenerator, path: Path, direction: str, image_size: int) -> Path:
    """Write ``G`` (unwrapped, any device) to ``path``; ``direction`` ("A2B"/"B2A") and the training
    ``image_size`` go into config.json for translate.py. Swapped into place when complete, so an
    interrupted export never leaves a half-written folder where a good one was."""
    config = {"channels": G.channels, "g_channels": G.g_channels, "n_blocks": G.n_blocks, "arch": G.arch,
              "direction": direction, "image_size": image_size}
    with atomic_folder(Path(path)) as tmp:
        G.save_pretrained(str(tmp), config=config)
    return Path(path)


def load_translator(path) -> tuple:
    """``(G in eval mode, config dict)`` from a folder written by :func:`save_translator`."""
    path = Path(path)
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise UserError(f"--generator {path}: not an exported generator folder (no config.json); pass "
                        "OUTPUT_DIR/generator_A2B or OUTPUT_DIR/generator_B2A of a train_cyclegan.py run")
    try:
        config = json.loads(cfg_file.read_text())
    except json.JSONDecodeError as err:
        raise UserError(f"--generator {path}: config.json is not valid JSON ({err})") from None
    if config.get("arch") != ResnetGenerator.arch:
        raise UserError(f"--generator {path}: a {config.get('arch', 'dcgan')!r} generator, not a CycleGAN translator; "
                        "for noise-to-image generators use scripts/sample_gan.py")
    G: nn.Module = ResnetGenerator.from_pretrained(str(path))
    return G.eval().requires_grad_(False), config
