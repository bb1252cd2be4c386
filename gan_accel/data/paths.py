"""Checks on the folders a script reads and writes, made before anything is written."""

from __future__ import annotations

import errno
import importlib
import os
from pathlib import Path
from typing import FrozenSet, Iterable, Mapping, Optional, Sequence, Set, Tuple, Union

from ..errors import UserError
from ..writes import declare_output, write_point

PathLike = Union[str, Path]


def is_within(path: PathLike, folder: PathLike) -> bool:
    """``path`` is ``folder`` or lies under it, once symlinks and ``..`` are resolved (a path that
    does not exist yet is resolved as far as it exists)."""
    path = Path(path).resolve()
    folder = Path(folder).resolve()
    return path == folder or folder in path.parents


def check_writable_folder(flag: str, folder: PathLike) -> None:
    """A folder that exists, or can be created: no existing file at its place or above it."""
    for path in [Path(folder), *Path(folder).parents]:
        if path.exists():
            if not path.is_dir():
                what = "is a file" if path == Path(folder) else f"cannot be created: {path} is a file"
                raise UserError(f"{flag} {folder}: {what}, not a folder; pass a folder")
            return


# ---- one rule for what a command reads and what it writes ----------------------------------------
# A folder counts as a training run's when it holds both of these (an exported generator also
# has a config.json, but neither metrics nor checkpoints).
RUN_MARKER = "config.json"
RUN_EVIDENCE = ("metrics.jsonl", "checkpoints")


def _relation(inner: PathLike, outer: PathLike) -> str:
    return "is the same as" if Path(inner).resolve() == Path(outer).resolve() else "is inside"


def _a(flag: str) -> str:
    return f"{'an' if flag.lstrip('-')[:1] in 'aeiou' else 'a'} {flag}"


def is_run_folder(folder: Path) -> bool:
    return (folder / RUN_MARKER).is_file() and any((folder / name).exists() for name in RUN_EVIDENCE)


def owning_run(path: PathLike) -> Optional[Tuple[Path, str]]:
    """The training run whose next export or ``--overwrite_output_dir`` replaces ``path``: the
    nearest run folder above it and the name (``samples``, ``generator``, ...) it lies under."""
    resolved = Path(path).resolve()
    for folder in resolved.parents:
        if is_run_folder(folder):
            top = resolved.relative_to(folder).parts[0]
            return (folder, top) if top in run_replaced_names() else None
    return None


# What some run replaces at the top of its folder: what every run writes and each task's own
# outputs. Tasks add theirs when their class is defined (gan_accel.runner.Task); this module owns
# the set, so the runner depends on it and not the other way round.
_RUN_REPLACED: Set[str] = set()
# The built-in tasks, imported by name on first use: only a path under a run folder needs them,
# and a command that never meets one should not pay for importing every task.
BUILT_IN_TASKS = (
    "gan_accel.gan.trainer",
    "gan_accel.cyclegan.trainer",
    "gan_accel.classifier.train",
    "gan_accel.classifier.distill.train",
)


def declare_run_outputs(names: Iterable[str]) -> None:
    """Record names a run replaces at the top of its folder (called by every task class)."""
    _RUN_REPLACED.update(names)


def run_replaced_names() -> FrozenSet[str]:
    """Every name a run of a known task replaces in its folder (a command that writes under
    another run's folder must keep out of them: :func:`check_folders`)."""
    for module in BUILT_IN_TASKS:
        importlib.import_module(module)
    return frozenset(_RUN_REPLACED)


def check_folders(
    reads: Mapping[str, Optional[PathLike]],
    writes: Mapping[str, Optional[PathLike]],
    replaces: Mapping[str, Sequence[PathLike]] = {},
) -> None:
    """Refuse, before anything is read or written, every relation that loses data or feeds a
    command its own outputs (paths resolved: symlinks and ``..``):

    - a write target (``writes``: flag -> path) equal to or inside an input (``reads``);
    - an input inside a folder a write replaces or deletes (``replaces``: flag -> folders, e.g.
      a run's ``samples/`` and ``generator/`` under ``--output_dir``);
    - a write target inside a folder another run replaces (``R/samples``, ``R/generator``).

    One line names both flags (or the run folder) and what to do. None values are skipped."""
    reads = {flag: path for flag, path in reads.items() if path}
    for write_flag, target in writes.items():
        if not target:
            continue
        for read_flag, source in reads.items():
            if is_within(target, source):
                raise UserError(
                    f"{write_flag} {target}: {_relation(target, source)} {read_flag} {source}; what is written "
                    f"would replace what is read, or be read back as input next time; choose {_a(write_flag)} "
                    "outside it"
                )
            for folder in replaces.get(write_flag, ()):
                if is_within(source, folder):
                    raise UserError(
                        f"{read_flag} {source}: {_relation(source, folder)} {folder}, which {write_flag} {target} "
                        f"writes into or replaces: it would be rewritten or deleted; move it out, or choose another "
                        f"{write_flag}"
                    )
        owner = owning_run(target)
        if owner is not None:
            run, name = owner
            raise UserError(
                f"{write_flag} {target}: inside {run / name}, which the run in {run} replaces at its next "
                f"export or --overwrite_output_dir; choose {_a(write_flag)} outside it"
            )
        check_can_write(write_flag, target)
        declare_output(write_flag, target)


def check_can_write(flag: str, target: PathLike) -> None:
    """Whether ``target`` (a folder or a file) can be written, asked of the nearest part of it that
    exists before any work: a read-only file system or folder found after minutes of evaluation
    loses those minutes. A write point, so an injected fault can stand for a read-only disk."""
    place = Path(target)
    while not place.exists() and place != place.parent:
        place = place.parent
    if place.is_file():
        place = place.parent
    try:
        write_point(place)
        if not os.access(place, os.W_OK):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as err:
        raise UserError(
            f"{flag} {target}: cannot write in {place} ({err.strerror}); choose {_a(flag)} on a writable disk"
        ) from None
