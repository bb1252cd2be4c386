"""Export of a trained generator (safetensors + ``config.json``) and its loading, with one-line
errors for every folder that is not such an export."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import torch
import torch.nn as nn
from safetensors import SafetensorError

from ..errors import UserError
from ..loop.atomic import atomic_folder
from .dcgan import DCGANGenerator
from .fastgan import FastGANGenerator
from .resnet import ResNetGenerator

GENERATORS = {"dcgan": DCGANGenerator, "resnet": ResNetGenerator, "fastgan": FastGANGenerator}
WEIGHTS = "model.safetensors"  # the file name PyTorchModelHubMixin writes and reads
# Keys every exported generator's config.json has (its init arguments); a classifier's or a
# training run's config.json lacks some of them.
GENERATOR_KEYS = ("z_dim", "channels", "image_size")


def save_generator(
    G: nn.Module, path: Path, run_config: Optional[dict] = None, metrics: Optional[Sequence[dict]] = None
) -> None:
    """Safetensors weights + ``config.json`` (init arguments and ``arch``), loadable by
    :func:`load_generator` without any training config (see :func:`save_export`), and a model
    card (``README.md``, ``samples.png``) with the run's settings ``run_config`` and ``metrics``
    (``[{name, value, protocol}]``)."""
    config = dict(getattr(G, "_hub_mixin_config", None) or {})
    config["arch"] = G.arch
    if not config.get("progressive", True):
        del config["progressive"]  # a plain generator's config.json stays as older versions read it
    save_export(G, path, config, card=CardInfo(run_config, metrics))


@dataclass
class CardInfo:
    """What the model card of an export says besides the network itself (see :mod:`.hub`)."""

    run_config: Optional[dict] = None  # the run's resolved settings (flat dict, as its config.json)
    metrics: Optional[Sequence[dict]] = None  # [{name, value, protocol: dict}]
    translator: bool = False  # image-to-image card (CycleGAN) instead of a generator's
    samples: Any = None  # (images, nrow) or an image file; None: drawn from G (generators)
    repo_suffix: str = ""  # appended to --hub_model_id (one repo per translator)


def save_export(G: nn.Module, path: Path, config: dict, card: Optional[CardInfo] = None) -> None:
    """``G.save_pretrained`` (PyTorchModelHubMixin) into ``path`` with ``config`` as config.json and
    the model card of ``card`` as README.md, written atomically (the same swap as checkpoints), so
    ``path`` always holds one complete export. Refuses a network with a non-finite weight or
    BatchNorm statistic: an export is what users sample from, garbage must not be one."""
    from .hub import card_model_id, write_model_card

    card = card or CardInfo()
    bad = non_finite_tensor(G)
    if bad is not None:
        raise UserError(
            f"not exporting {path}: the generator's weight {bad} is not finite (NaN/Inf), the run diverged; "
            "lower the learning rates and resume from an earlier checkpoint"
        )
    with atomic_folder(Path(path)) as tmp:
        G.save_pretrained(str(tmp), config=config)
        model_id = card_model_id(Path(path), card.run_config, card.repo_suffix)
        write_model_card(tmp, G, model_id, card.run_config, card.metrics, card.translator, card.samples)


def non_finite_tensor(G: nn.Module) -> Optional[str]:
    """The name of the first weight or BatchNorm statistic of ``G`` holding a NaN or Inf, or None.
    Such a network draws black or NaN images and NaN metrics without any error of its own."""
    for name, tensor in (*G.named_parameters(), *G.named_buffers()):
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            return name
    return None


def read_export_config(path: Path, hint: str, run_exports: Sequence[str] = ()) -> dict:
    """``config.json`` of the export folder ``path`` (as ``--generator``), or a one-line
    :class:`UserError` ending with ``hint`` (what to pass instead). ``run_exports``: the export
    folders a training run holds, to recognise a run folder passed in place of its export."""
    flag = f"--generator {path}"
    if not path.exists():
        raise UserError(f"{flag}: does not exist; {hint}")
    if not path.is_dir():
        raise UserError(f"{flag}: not a folder; {hint}")
    present = [n for n in run_exports if (path / n / "config.json").is_file()]
    if present or (run_exports and (path / "checkpoints").is_dir()):
        if present:
            raise UserError(f"{flag}: this is a training run folder, not its export; pass {path / present[0]}")
        raise UserError(f"{flag}: this is a training run folder without a {' or '.join(run_exports)} export; {hint}")
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise UserError(f"{flag}: not an exported generator folder (no config.json); {hint}")
    try:
        config = json.loads(cfg_file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"{flag}: config.json is not readable JSON ({err})") from None
    return config


def load_export(cls, path: Path) -> nn.Module:
    """``cls.from_pretrained(path)``, in eval mode and frozen, or a one-line :class:`UserError`
    for missing, truncated or mismatched weights, or weights that are not finite. Every command
    that reads an export (sampling, evaluation, ONNX, translation) loads it here."""
    flag = f"--generator {path}"
    if not (path / WEIGHTS).is_file():
        raise UserError(f"{flag}: config.json but no {WEIGHTS}; the export is incomplete, export it again")
    try:
        # strict: weights that do not match the architecture in config.json are an error, not a
        # partly random generator.
        G = cls.from_pretrained(str(path), strict=True)
    except (SafetensorError, OSError, RuntimeError, TypeError, ValueError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UserError(
            f"{flag}: could not load {WEIGHTS} ({reason}); the file is truncated or does not match "
            "config.json, export it again"
        ) from None
    bad = non_finite_tensor(G)
    if bad is not None:
        # Exports are refused when not finite (save_export), but a file edited, written by an
        # older version or by another tool reaches here: refuse it before any image is drawn.
        raise UserError(
            f"{flag}: {path / WEIGHTS} holds NaN/Inf in {bad}; the run that wrote it diverged: "
            "export an earlier checkpoint or train again with lower learning rates"
        )
    return G.eval().requires_grad_(False)


def load_generator(path, translator_hint: str = "use gan-accel translate for it") -> nn.Module:
    """The generator exported to ``path`` by :func:`save_generator`, in eval mode, frozen.
    ``translator_hint``: what to do instead when ``path`` is a CycleGAN translator (the command
    that takes one)."""
    path = Path(path)
    config = read_export_config(
        path,
        "pass OUTPUT_DIR/generator of a finished gan-accel train-gan run (a CycleGAN run's "
        "generator_A2B/B2A are translators: use gan-accel translate)",
        run_exports=("generator", "best_generator"),
    )
    flag = f"--generator {path}"
    if isinstance(config, dict) and "direction" in config and "z_dim" not in config:
        raise UserError(
            f"{flag}: this is a CycleGAN translator ({config['direction']}), not a noise-to-image "
            f"generator; {translator_hint}"
        )
    if not isinstance(config, dict) or any(key not in config for key in GENERATOR_KEYS):
        kind = config.get("model_type") or (config.get("architectures") or [""])[0] if isinstance(config, dict) else ""
        what = f" (it describes a {kind} model)" if kind else ""
        raise UserError(
            f"{flag}: not a generator: its config.json has no {'/'.join(GENERATOR_KEYS)}{what}; "
            "pass OUTPUT_DIR/generator of a GAN training run"
        )
    arch = config.get("arch", "dcgan")
    if arch not in GENERATORS:
        raise UserError(f"{flag}: unknown arch {arch!r} in config.json (known: {', '.join(GENERATORS)})")
    return load_export(GENERATORS[arch], path)
