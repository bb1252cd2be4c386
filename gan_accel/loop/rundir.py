"""What ``--overwrite_output_dir`` clears: exactly what the run's task declares it writes; and
what a resume from an older checkpoint sets aside (the abandoned branch's later files).

The README tells users to put their own things next to a run (``png/``, ``grid.png``, ``eval/``,
notes); overwriting a run must not delete them. Only the names a task declares
(:class:`gan_accel.runner.Output`, plus what every run writes) are removed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import FrozenSet, List, Optional, Sequence, Tuple

# What every run writes at the top of OUTPUT_DIR (the lock file is not here: the run that
# overwrites holds it); a hand-written TrainingRun that declares nothing clears these.
RUN_OUTPUTS = ("config.json", "metrics.jsonl", "checkpoints", "logs", "plots", "report.html")


def clear_run_outputs(out: Path, outputs: Sequence[str] = RUN_OUTPUTS) -> Tuple[List[str], List[str]]:
    """Delete the run's own ``outputs`` in ``out``; return (removed, kept) top-level names."""
    removed = []
    kept = []
    for entry in sorted(out.iterdir(), key=lambda p: p.name):
        if entry.name in outputs:
            remove_entry(entry)
            removed.append(entry.name)
        elif entry.name != "run.lock":
            kept.append(entry.name)
    return removed, kept


@dataclass(frozen=True)
class FolderBefore:
    """What a start found, so that a start that fails can leave the folder as startable as it
    found it: otherwise the ``config.json`` it wrote makes the corrected command's start refused
    as "holds another run"."""

    created: Optional[Path]  # the topmost folder the start creates (None: --output_dir existed)
    names: FrozenSet[str] = frozenset()  # top-level names there once cleared by --overwrite_output_dir
    marker: Optional[bytes] = None  # config.json of the run being resumed (every start rewrites it)
    marker_times: Tuple[int, int] = (0, 0)  # its (atime, mtime) in ns, put back with it


def remove_entry(entry: Path, missing_ok: bool = False) -> None:
    """Delete a file, a link (not what it points to) or a folder with its contents."""
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=missing_ok)
    else:
        entry.unlink(missing_ok=missing_ok)


def topmost_missing(folder: Path) -> Optional[Path]:
    """The first folder of ``folder``'s path that does not exist yet (None: it exists)."""
    folder = Path(folder).absolute()
    missing = None
    for path in (folder, *folder.parents):
        if path.exists():
            break
        missing = path
    return missing


def folder_contents(folder: Path, created: Optional[Path], marker: str) -> FolderBefore:
    """``folder`` as a start that has just created (``created``) or cleared it leaves it."""
    if created is not None:
        return FolderBefore(created)
    names = frozenset(p.name for p in folder.iterdir())
    try:
        saved = (folder / marker).read_bytes()
        st = (folder / marker).stat()
    except OSError:
        return FolderBefore(None, names)
    return FolderBefore(None, names, saved, (st.st_atime_ns, st.st_mtime_ns))


def undo_start(folder: Path, before: FolderBefore, outputs: Sequence[str], marker: str) -> None:
    """Remove what a failed start wrote: the folder it created, or the run's own ``outputs`` that
    were not there before (the user's files and an earlier run's are never touched), and put the
    resumed run's ``config.json`` back."""
    if before.created is not None:
        shutil.rmtree(before.created, ignore_errors=True)
        return
    for name in outputs:
        entry = folder / name
        if name in before.names or not (entry.exists() or entry.is_symlink()):
            continue
        remove_entry(entry, missing_ok=True)
    if before.marker is not None:
        (folder / marker).write_bytes(before.marker)
        os.utime(folder / marker, ns=before.marker_times)


# ---- a resume that starts a new branch -------------------------------------------------------
# Resuming from an older checkpoint than the newest abandons what came after it. Those files are
# set aside, never deleted: renamed with this suffix (``metrics.jsonl.dropped`` holds the log
# lines), where ``latest``, the plots and the animation do not read them.
DROPPED = ".dropped"
GRIDS = "samples"  # a folder of per-step grids, step_XXXXXX.png: set aside one by one
_STEP = re.compile(r"^step_(\d+)(\.png)?$")  # a set-aside one (step_00000006.dropped) is not matched


def step_of(path: Path) -> Optional[int]:
    """``step_00000006`` or ``step_000006.png`` -> 6; None for any other name."""
    match = _STEP.match(path.name)
    return int(match.group(1)) if match else None


SCORE_FILE = "score.json"  # in an export (best_generator/): the step its weights were reached at


def recorded_step(export: Path) -> Optional[int]:
    """The step an export's ``score.json`` says its weights are from; None without one."""
    try:
        step = json.loads((export / SCORE_FILE).read_text()).get("step")
    except (OSError, ValueError, AttributeError):
        return None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def abandoned_after(out: Path, step: int, since_ns: int, exports: Sequence[str]) -> List[Path]:
    """What a run wrote after the checkpoint at ``step`` (written at ``since_ns``): the later
    checkpoints and grids, by the step in their names, and the exports (``generator``,
    ``best_generator``, ...) of later steps: by the step their ``score.json`` records, else by
    their modification time. The recorded step decides where it exists: a best generator reached
    at the checkpoint's own step is written just after that checkpoint, yet belongs to the branch
    that is kept (and no later evaluation of it may beat and so rewrite it)."""
    later = []
    for folder in (out / "checkpoints", out / GRIDS):
        if folder.is_dir():
            later += sorted(p for p in folder.iterdir() if (step_of(p) or 0) > step)
    for name in exports:
        path = out / name
        if not path.exists():
            continue
        reached = recorded_step(path)
        if reached > step if reached is not None else path.stat().st_mtime_ns > since_ns:
            later.append(path)
    return later


def set_aside(path: Path) -> Path:
    """Rename ``path`` to ``NAME.dropped`` (``NAME.dropped2``, ... when an earlier branch took it)."""
    target = path.with_name(path.name + DROPPED)
    number = 2
    while target.exists():
        target = path.with_name(f"{path.name}{DROPPED}{number}")
        number += 1
    os.replace(path, target)
    return target


def describe_paths(paths: Sequence[Path], out: Path, shown: int = 3) -> str:
    """``checkpoints/ step_00000006, step_00000008; samples/ 12 files; best_generator`` (a
    folder's files named up to ``shown``, then counted)."""
    groups: dict = {}
    for path in paths:
        parent = path.parent.relative_to(out).as_posix()
        groups.setdefault(parent, []).append(path.name)
    parts = []
    for parent, names in groups.items():
        if parent == ".":
            parts.append(", ".join(names))
        else:
            listed = ", ".join(names) if len(names) <= shown else f"{len(names)} files, {names[0]} to {names[-1]}"
            parts.append(f"{parent}/ {listed}")
    return "; ".join(parts)
