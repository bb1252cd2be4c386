"""What ``--overwrite_output_dir`` clears: exactly what the run's task declares it writes; and
what a resume from an older checkpoint sets aside (the abandoned branch's later files).

The README tells users to put their own things next to a run (``png/``, ``grid.png``, ``eval/``,
notes); overwriting a run must not delete them. Only the names a task declares
(:class:`gan_accel.runner.Output`, plus what every run writes) are removed.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

# What every run writes at the top of OUTPUT_DIR (the lock file is not here: the run that
# overwrites holds it); a hand-written TrainingRun that declares nothing clears these.
RUN_OUTPUTS = ("config.json", "metrics.jsonl", "checkpoints", "logs", "plots")


def clear_run_outputs(out: Path, outputs: Sequence[str] = RUN_OUTPUTS) -> Tuple[List[str], List[str]]:
    """Delete the run's own ``outputs`` in ``out``; return (removed, kept) top-level names."""
    removed = []
    kept = []
    for entry in sorted(out.iterdir(), key=lambda p: p.name):
        if entry.name in outputs:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry.name)
        elif entry.name != "run.lock":
            kept.append(entry.name)
    return removed, kept


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


def abandoned_after(out: Path, step: int, since_ns: int, exports: Sequence[str]) -> List[Path]:
    """What a run wrote after the checkpoint at ``step`` (written at ``since_ns``): the later
    checkpoints and grids, by the step in their names, and the exports (``generator``,
    ``best_generator``, ...) written after that checkpoint, by their modification time."""
    later = []
    for folder in (out / "checkpoints", out / GRIDS):
        if folder.is_dir():
            later += sorted(p for p in folder.iterdir() if (step_of(p) or 0) > step)
    for name in exports:
        path = out / name
        if path.exists() and path.stat().st_mtime_ns > since_ns:
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
