"""State that is neither weights nor optimizer (EMA copies, image pools, teacher caches),
registered by name and written into every checkpoint as ``NAME.safetensors``; and the recipe's
signature (``recipe.json``), which a resume must match."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List

import torch
from safetensors.torch import load_file, save_file

from ..errors import UserError

RECIPE_FILE = "recipe.json"


def save_extra_states(states: Dict[str, object], folder: Path) -> None:
    """Each object's ``state_dict()`` must be a flat dict of tensors."""
    for name, obj in states.items():
        tensors = {k: v.detach().contiguous().cpu() for k, v in obj.state_dict().items()}
        save_file(tensors, str(Path(folder) / f"{name}.safetensors"))


def load_extra_states(states: Dict[str, object], folder: Path) -> None:
    for name, obj in states.items():
        path = Path(folder) / f"{name}.safetensors"
        if not path.is_file():
            raise UserError(
                f"--resume_from_checkpoint {folder}: no {path.name} (this run registers state {name!r}); "
                "resume a checkpoint of the same recipe or start a new --output_dir"
            )
        obj.load_state_dict(load_file(str(path)))


def extra_tensors(states: Dict[str, object]) -> List[torch.Tensor]:
    return [
        v for obj in states.values() for v in obj.state_dict().values() if torch.is_tensor(v) and v.is_floating_point()
    ]


def write_recipe(folder: Path, signature: dict) -> None:
    (Path(folder) / RECIPE_FILE).write_text(json.dumps(signature, indent=2) + "\n")


def recipe_differences(saved: dict, current: dict) -> List[str]:
    return [
        f"{key} {saved.get(key)} -> {current.get(key)}"
        for key in sorted(set(saved) | set(current))
        if saved.get(key) != current.get(key)
    ]


def check_recipe(folder: Path, signature: dict) -> None:
    """Refuse a checkpoint written by another recipe, naming what differs (a checkpoint's files
    are positional: another set or order of networks would load weights into the wrong ones)."""
    path = Path(folder) / RECIPE_FILE
    if not path.is_file():
        return  # written before recipes were recorded: the config comparison still applies
    try:
        saved = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise UserError(f"--resume_from_checkpoint {folder}: unreadable {RECIPE_FILE} ({err})") from None
    diffs = recipe_differences(saved, json.loads(json.dumps(signature)))
    if diffs:
        raise UserError(
            f"--resume_from_checkpoint {folder}: the checkpoint was written by a different recipe "
            f"({'; '.join(diffs)}); resume it with the same networks and phases or start a new --output_dir"
        )
