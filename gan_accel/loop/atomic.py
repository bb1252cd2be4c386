"""Folders that appear complete or not at all: written under ``.tmp-NAME`` and swapped into
place, for checkpoints and every export (a process killed at any moment leaves the previous
folder intact, and readers never see a partial one)."""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def tmp_name(final: Path) -> Path:
    return final.with_name(f".tmp-{final.name}")


def swap_into_place(tmp: Path, final: Path) -> None:
    """Rename the complete ``tmp`` to ``final``; an existing ``final`` is moved aside first and
    deleted after, so at every moment one complete version exists under a known name."""
    if final.exists():
        old = final.with_name(f".old-{final.name}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)
    fsync_dir(final.parent)


@contextmanager
def atomic_folder(final: Path) -> Iterator[Path]:
    """``with atomic_folder(out) as tmp:`` write into ``tmp``; on success it becomes ``out``, on an
    error it is removed and ``out`` is untouched."""
    final = Path(final)
    tmp = tmp_name(final)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    swap_into_place(tmp, final)


def write_json_durable(path: Path, data: dict) -> None:
    with path.open("w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
