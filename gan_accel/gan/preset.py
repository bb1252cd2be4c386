"""``--preset auto``: the settings a folder of images gets when the user gives nothing else.

As stylegan2-ada's ``--cfg auto`` picks widths and learning rates from the resolution and the GPU
count, :func:`choose` picks the architecture, widths, batch size, learning rates, loss,
regularisation, augmentation and evaluation from what is known before training: the number of
images, their resolution and colour, the device and the budget. It is a pure function of those
facts (the table is in docs/photos.md); :func:`apply` then sets every chosen field the user did
not pass explicitly, and each choice is printed with its reason, one line each.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Set, Tuple

from ..errors import ConfigError, UserError
from .preset_choice import Choice, DataFacts, choose, fit_to_flags

GREY_MODES = ("L", "LA", "1", "I", "I;16", "F")  # PIL modes of single-channel images


# What folder_facts would read from a folder, for the datasets with a fixed training split (the
# bundled digits, torchvision's downloads); a hub dataset stays unknown.
KNOWN_DATASETS = {
    "digits": dict(num_images=1797, native_size=8, colour=False, num_classes=10),
    "mnist": dict(num_images=60_000, native_size=28, colour=False, num_classes=10),
    "fashion_mnist": dict(num_images=60_000, native_size=28, colour=False, num_classes=10),
    "cifar10": dict(num_images=50_000, native_size=32, colour=True, num_classes=10),
}


def resumed_settings(output_dir: Optional[str], resume: Optional[str]) -> Tuple[Optional[Path], dict]:
    """The checkpoint ``--resume_from_checkpoint`` names and the settings it was trained with;
    ``(None, {})`` for a fresh run or one the run itself will refuse (it says why)."""
    from ..loop.checkpoint import STATE_FILE, CheckpointManager

    if not resume or not output_dir:
        return None, {}
    path = CheckpointManager(None, Path(output_dir), 0).latest() if resume == "latest" else Path(resume)
    try:
        return path, dict(json.loads((path / STATE_FILE).read_text()).get("config") or {})
    except (OSError, TypeError, ValueError, AttributeError):
        return None, {}


def keep_resumed(choices: List[Choice], path: Optional[Path], saved: dict) -> List[Choice]:
    """A resumed run continues with the settings it was trained with: the preset re-derived from
    data that has grown since (``--allow_data_change``, "more images collected") would change, say,
    the batch size, which a resume refuses."""
    return [
        Choice(c.field, saved[c.field], f"kept from {path.name}, the checkpoint this run resumes")
        if c.field in saved and saved[c.field] != c.value
        else c
        for c in choices
    ]


def explicit_flags(
    argv: Optional[Sequence[str]], file_keys: Iterable[str] = (), aliases: Optional[dict] = None
) -> Set[str]:
    """The field names the user set: ``--name value``, ``--name=value``, bare ``--flag`` and the
    keys of a ``--config`` file (all of them win over the preset)."""
    aliases = aliases or {}
    names = set(file_keys)
    for token in argv or ():
        if token.startswith("--") and len(token) > 2:
            name = token[2:].split("=", 1)[0].replace("-", "_")
            if name.startswith("no_"):
                names.add(name[3:])  # HfArgumentParser's --no_flag for booleans that default to True
            names.add(aliases.get(name, name))
    return names


# A count over the run replaces a cadence: a cadence the user gives keeps its count at 0 (off).
CADENCE_OF = {"num_grids": "sample_every", "num_evaluations": "eval_every"}


def apply(configs: Tuple, choices: List[Choice], explicit: Set[str]) -> Tuple[tuple, List[str]]:
    """``configs`` with each choice applied to the dataclass that has the field, unless the user
    set it; and one line per choice saying what was chosen and why (or that the flag won)."""
    lines = []
    updated = list(configs)
    for choice in choices:
        owner = next(
            (i for i, cfg in enumerate(updated) if choice.field in {f.name for f in dataclasses.fields(cfg)}), None
        )
        if owner is None:
            continue
        if choice.field in explicit:
            lines.append(
                f"  --{choice.field} {getattr(updated[owner], choice.field)} (your flag; the preset would "
                f"use {choice.value}: {choice.reason})"
            )
            continue
        cadence = CADENCE_OF.get(choice.field)
        if cadence in explicit:
            lines.append(f"  --{choice.field} 0 (your --{cadence} wins; the preset would use {choice.value})")
            continue
        updated[owner] = dataclasses.replace(updated[owner], **{choice.field: choice.value})
        lines.append(f"  --{choice.field} {choice.value}: {choice.reason}")
    return tuple(updated), lines


def run_length(train, command_line: Set[str], print_fn=print):
    """``train`` with one length: ``--max_steps`` and ``--time_budget`` both set it. On the command
    line together they contradict each other (one clear error); a command-line flag wins over the
    other one from a ``--config`` file (a file's budget is dropped, said in one line); and from a
    file alone the budget wins (a saved config.json lists ``max_steps`` beside ``time_budget``)."""
    if train.time_budget is None or "max_steps" not in command_line:
        return train
    if "time_budget" in command_line:
        raise ConfigError(
            f"--max_steps {train.max_steps} and --time_budget {train.time_budget} both set the run's length: "
            "give one (the budget measures the pace and sets the steps itself)"
        )
    print_fn(f"--max_steps {train.max_steps} (your flag) replaces the config file's --time_budget {train.time_budget}")
    return dataclasses.replace(train, time_budget=None)


def wanted(preset: Optional[str], dataset: str, has_config: bool) -> bool:
    """``--preset auto`` explicitly, or by default for a folder given without ``--config``."""
    if preset is not None:
        return preset == "auto"
    return dataset in ("folder", "imagefolder") and not has_config


def folder_facts(data_dir: Optional[str], device: str, budget_s: Optional[float]) -> DataFacts:
    """Facts of an image folder: its image count, class sub-folders, and the first image's size and
    colour (one file opened). A bad folder raises the data loader's own one-line error."""
    from PIL import Image

    from ..data.images import folder_files

    _, files, labels, class_names = folder_files(data_dir)
    native, colour = None, None
    try:
        with Image.open(files[0]) as image:
            native = min(image.size)
            colour = image.mode not in GREY_MODES
    except OSError:
        pass  # an unreadable first file: the loader skips and counts it; the preset keeps the defaults
    return DataFacts(
        num_images=len(files),
        native_size=native,
        colour=colour,
        labelled=labels is not None and len(class_names) >= 2,
        device=device,
        budget_s=budget_s,
        num_classes=len(class_names) if labels is not None else 0,
    )


def given_settings(configs: Tuple, argv: Optional[Sequence[str]]) -> Set[str]:
    """The field names the user set on the command line or in its ``--config`` file."""
    import sys

    from ..config import field_aliases, load_config_file

    argv = sys.argv[1:] if argv is None else list(argv)
    config_path = _config_path(argv)
    file_keys = load_config_file(config_path).keys() if config_path else ()
    return explicit_flags(argv, file_keys, field_aliases(tuple(type(c) for c in configs)))


def _config_path(argv: Sequence[str]) -> Optional[str]:
    return next(
        (argv[i + 1] for i, tok in enumerate(argv or ()) if tok == "--config" and i + 1 < len(argv)),
        next((tok.split("=", 1)[1] for tok in argv or () if tok.startswith("--config=")), None),
    )


def preset_off_warnings(data, explicit: Set[str]) -> List[str]:
    """Without the preset, the flags' defaults apply as they are: ``--channels 1`` makes colour
    photos grey. Said when the folder's first image is colour and ``--channels`` was not given."""
    if data.dataset not in ("folder", "imagefolder") or not data.data_dir or "channels" in explicit:
        return []
    if data.channels != 1:
        return []
    from PIL import Image

    from ..data.images import folder_files

    try:
        _, files, _, _ = folder_files(data.data_dir)
        with Image.open(files[0]) as image:
            colour = image.mode not in GREY_MODES
    except (UserError, OSError, IndexError, ValueError):
        return []  # the run's own data loading says what is wrong with the folder
    if not colour:
        return []
    return [
        f"warning: {data.data_dir} holds colour images, but without the preset --channels is 1: the run "
        "trains on grey copies; pass --channels 3 for colour"
    ]


def resolve(configs: Tuple, argv: Optional[Sequence[str]], print_fn=print) -> Tuple:
    """The script's entry: ``(data, model, train, evaluation, run)`` with one run length
    (:func:`run_length`) and the preset applied when it is wanted, its choices printed."""
    import os
    import sys

    import torch

    from ..config import field_aliases
    from ..loop.budget import format_duration, parse_duration
    from ..metrics.cache import resolve_cache_dir

    argv = sys.argv[1:] if argv is None else list(argv)
    data, model, train, evaluation, run = configs
    config_path = _config_path(argv)
    aliases = field_aliases(tuple(type(c) for c in configs))
    # Printed by the script before Accelerate starts: under torchrun, by the first local process only.
    first = os.environ.get("LOCAL_RANK", "0") == "0"
    train = run_length(train, explicit_flags(argv, (), aliases), print_fn if first else lambda *_: None)
    configs = (data, model, train, evaluation, run)
    explicit = given_settings(configs, argv)
    if not wanted(train.preset, data.dataset, config_path is not None):
        if first:
            for line in preset_off_warnings(data, explicit):
                print_fn(line)
        return configs
    device = "cuda" if torch.cuda.is_available() and not run.cpu else "cpu"
    budget_s = parse_duration(train.time_budget) if train.time_budget else None
    if data.dataset in ("folder", "imagefolder") and data.data_dir:
        facts = folder_facts(data.data_dir, device, budget_s)
    elif data.dataset in KNOWN_DATASETS:
        facts = DataFacts(labelled=True, device=device, budget_s=budget_s, **KNOWN_DATASETS[data.dataset])
    else:
        facts = DataFacts(
            num_images=None, native_size=None, colour=None, labelled=False, device=device, budget_s=budget_s
        )
    processes = int(os.environ.get("WORLD_SIZE", "1"))
    facts = dataclasses.replace(facts, cache_dir=str(resolve_cache_dir() / "eval"), processes=processes)
    choices = fit_to_flags(
        choose(facts),
        model.progressive and "arch" not in explicit,
        model.arch if "arch" in explicit else None,
        train.r1_gamma if "r1_gamma" in explicit else None,
    )
    choices = keep_resumed(choices, *resumed_settings(run.output_dir, run.resume_from_checkpoint))
    configs, lines = apply(configs, choices, explicit)
    data, model, train, evaluation, run = configs
    asked = explicit & {"num_evaluations", "eval_every"}
    evaluation.chosen_by_preset = bool(evaluation.num_evaluations) and not asked
    train = dataclasses.replace(train, preset="auto")  # config.json says so
    configs = (data, model, train, evaluation, run)
    described = ", ".join(
        filter(
            None,
            [
                f"{facts.num_images} images" if facts.num_images is not None else "an unknown number of images",
                f"{facts.native_size} px" if facts.native_size else None,
                None if facts.colour is None else ("colour" if facts.colour else "grey"),
                "labelled" if facts.labelled else "unlabelled",
                device,
                f"budget {format_duration(budget_s)}" if budget_s else "no --time_budget",
            ],
        )
    )
    train.preset_lines = (f"--preset auto ({described}); any flag you pass wins:", *lines)
    if first:
        for line in train.preset_lines:
            print_fn(line)
    return configs
