"""Export of a trained generator (safetensors + ``config.json``) and its loading, with one-line
errors for every folder that is not such an export."""
from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn as nn
from safetensors import SafetensorError

from ..errors import UserError
from ..loop.atomic import atomic_folder
from .dcgan import DCGANGenerator
from .resnet import ResNetGenerator

GENERATORS = {"dcgan": DCGANGenerator, "resnet": ResNetGenerator}
WEIGHTS = "model.safetensors"  # the file name PyTorchModelHubMixin writes and reads
# Keys every exported generator's config.json has (its init arguments); a classifier's or a
# training run's config.json lacks some of them.
GENERATOR_KEYS = ("z_dim", "channels", "image_size")


def save_generator(G: nn.Module, path: Path) -> None:
    """Safetensors weights + ``config.json`` (init arguments and ``arch``), loadable by
    :func:`load_generator` without any training config; written atomically (the same swap as
    checkpoints), so ``path`` always holds one complete generator. Refuses a generator with a
    non-finite weight or BatchNorm statistic: an export is what users sample from, garbage must
    not be one."""
    tensors = [t for t in (*G.parameters(), *G.buffers()) if t.is_floating_point()]
    if not all(bool(torch.isfinite(t).all()) for t in tensors):
        raise UserError(f"not exporting {path}: the generator's weights are not finite (NaN/Inf), the run diverged; "
                        "lower the learning rates and resume from an earlier checkpoint")
    config = dict(getattr(G, "_hub_mixin_config", None) or {})
    config["arch"] = G.arch
    with atomic_folder(Path(path)) as tmp:
        G.save_pretrained(str(tmp), config=config)


def _read_config(path: Path) -> dict:
    flag = f"--generator {path}"
    if not path.exists():
        raise UserError(f"{flag}: does not exist; pass OUTPUT_DIR/generator from a training run")
    if not path.is_dir():
        raise UserError(f"{flag}: not a folder; pass OUTPUT_DIR/generator from a training run")
    if (path / "generator" / "config.json").is_file() or (path / "checkpoints").is_dir():
        raise UserError(f"{flag}: this is a training run folder, not its export; pass {path / 'generator'}")
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise UserError(f"{flag}: not an exported generator folder (no config.json); "
                        "pass OUTPUT_DIR/generator from a training run")
    try:
        config = json.loads(cfg_file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"{flag}: config.json is not readable JSON ({err})") from None
    if not isinstance(config, dict) or any(key not in config for key in GENERATOR_KEYS):
        kind = config.get("model_type") or (config.get("architectures") or [""])[0] if isinstance(config, dict) else ""
        what = f" (it describes a {kind} model)" if kind else ""
        raise UserError(f"{flag}: not a generator: its config.json has no {'/'.join(GENERATOR_KEYS)}{what}; "
                        "pass OUTPUT_DIR/generator of a GAN training run")
    return config


def load_generator(path) -> nn.Module:
    """The generator exported to ``path`` by :func:`save_generator`, in eval mode, frozen."""
    path = Path(path)
    config = _read_config(path)
    flag = f"--generator {path}"
    arch = config.get("arch", "dcgan")
    if arch not in GENERATORS:
        raise UserError(f"{flag}: unknown arch {arch!r} in config.json (known: {', '.join(GENERATORS)})")
    if not (path / WEIGHTS).is_file():
        raise UserError(f"{flag}: config.json but no {WEIGHTS}; the export is incomplete, export it again")
    try:
        # strict: weights that do not match the architecture in config.json are an error, not a
        # partly random generator.
        G = GENERATORS[arch].from_pretrained(str(path), strict=True)
    except (SafetensorError, OSError, RuntimeError, TypeError, ValueError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UserError(f"{flag}: could not load {WEIGHTS} ({reason}); the file is truncated or does not match "
                        "config.json, export it again") from None
    return G.eval().requires_grad_(False)
