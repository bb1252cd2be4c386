"""What ``--overwrite_output_dir`` clears: exactly what the run's task declares it writes.

The README tells users to put their own things next to a run (``png/``, ``grid.png``, ``eval/``,
notes); overwriting a run must not delete them. Only the names a task declares
(:class:`gan_accel.runner.Output`, plus what every run writes) are removed.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import FrozenSet, List, Optional, Sequence, Tuple

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


@dataclass(frozen=True)
class FolderBefore:
    """What a start found, so that a start that fails can leave the folder as startable as it
    found it: otherwise the ``config.json`` it wrote makes the corrected command's start refused
    as "holds another run"."""

    created: Optional[Path]  # the topmost folder the start creates (None: --output_dir existed)
    names: FrozenSet[str] = frozenset()  # top-level names there once cleared by --overwrite_output_dir
    marker: Optional[bytes] = None  # config.json of the run being resumed (every start rewrites it)
    marker_times: Tuple[int, int] = (0, 0)  # its (atime, mtime) in ns, put back with it


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
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    if before.marker is not None:
        (folder / marker).write_bytes(before.marker)
        os.utime(folder / marker, ns=before.marker_times)
