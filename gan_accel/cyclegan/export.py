"""Exported translators: a ``save_pretrained`` folder per generator (``model.safetensors`` and
``config.json`` through PyTorchModelHubMixin), loadable without any training config."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..errors import UserError
from ..models.export import CardInfo, load_export, read_export_config, save_export
from .models import ResnetGenerator


def save_translator(
    G: ResnetGenerator,
    path: Path,
    direction: str,
    image_size: int,
    run_config: Optional[dict] = None,
    samples: Optional[Path] = None,
) -> Path:
    """Write ``G`` (unwrapped, any device) to ``path``; ``direction`` ("A2B"/"B2A") and the training
    ``image_size`` go into config.json for translate.py. Swapped into place when complete, and
    refused when a weight is not finite, as every generator export (:func:`save_export`). The model
    card shows ``samples`` (an image file, e.g. the run's last translation grid) when given."""
    config = {
        "channels": G.channels,
        "g_channels": G.g_channels,
        "n_blocks": G.n_blocks,
        "arch": G.arch,
        "direction": direction,
        "image_size": image_size,
    }
    card = CardInfo(run_config=run_config, translator=True, samples=samples, repo_suffix=f"-{direction}")
    save_export(G, Path(path), config, card=card)
    return Path(path)


# Keys of every translator's config.json (a GAN generator's or a classifier's lacks some).
TRANSLATOR_KEYS = ("arch", "direction", "channels", "n_blocks")
HINT = "pass OUTPUT_DIR/generator_A2B or OUTPUT_DIR/generator_B2A of a gan-accel train-cyclegan run"


def describe_config(config) -> str:
    """What a config.json that is not a translator's describes, for the error message."""
    if not isinstance(config, dict):
        return "not a model config"
    if "z_dim" in config:
        return f"a {config.get('arch', 'dcgan')!r} noise-to-image generator (use gan-accel sample-gan for it)"
    kind = config.get("model_type") or (config.get("architectures") or [""])[0]
    return f"a {kind} model" if kind else "not an exported generator"


def load_translator(path) -> tuple:
    """``(G in eval mode, config dict)`` from a folder written by :func:`save_translator`."""
    path = Path(path)
    config = read_export_config(path, HINT, run_exports=("generator_A2B", "generator_B2A"))
    if (
        not isinstance(config, dict)
        or any(k not in config for k in TRANSLATOR_KEYS)
        or config["arch"] != ResnetGenerator.arch
    ):
        raise UserError(
            f"--generator {path}: not a CycleGAN translator: its config.json describes "
            f"{describe_config(config)}; {HINT}"
        )
    return load_export(ResnetGenerator, path), config
