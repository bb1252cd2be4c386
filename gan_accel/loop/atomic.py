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

from safetensors import SafetensorError

from ..errors import UserError
from ..writes import output_flag, write_point

# What a failed write (a full disk, a quota, an I/O error) raises: OSError from Python's own
# writes, RuntimeError from torch.save's zip writer ("PytorchStreamWriter failed writing file"),
# SafetensorError from safetensors ("Error while serializing: ... os error 28"), which derives
# from neither.
WRITE_ERRORS = (OSError, RuntimeError, SafetensorError)


def write_failure(what: str, final: Path, err: BaseException, kept: str) -> UserError:
    """The one line for a folder that could not be written: ``what`` (checkpoint, export) and
    where, why (the error's first line), what is still there (``kept``) and what to do."""
    reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return UserError(
        f"could not write {what} {final} ({reason}); {kept}. Free disk space or pass another {output_flag(final)}"
    )


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
    error it is removed and ``out`` is untouched. A failed write (:data:`WRITE_ERRORS`) is one
    :class:`UserError` saying whether an earlier ``out`` is kept."""
    final = Path(final)
    tmp = tmp_name(final)
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        write_point(tmp)
        yield tmp
        swap_into_place(tmp, final)
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(err, WRITE_ERRORS):
            kept = f"the previous {final.name} is kept" if final.exists() else "nothing was written"
            raise write_failure("export", final, err, kept) from err
        raise


@contextmanager
def atomic_file(final: Path, what: str = "file") -> Iterator[Path]:
    """``with atomic_file(path) as tmp:`` write ``tmp`` (beside ``path``, with its suffix, which
    image writers read the format from); complete, it is renamed to ``path``. A failed write
    removes ``tmp`` and is one :class:`UserError` naming ``path`` and the flag it came from;
    ``path`` is as it was (no empty or partial file is left under either name)."""
    final = Path(final)
    tmp = tmp_name(final)
    try:
        write_point(tmp)
        yield tmp
        os.replace(tmp, final)
    except WRITE_ERRORS as err:
        kept = f"the previous {final.name} is kept" if final.exists() else "nothing was written there"
        raise write_failure(what, final, err, kept) from err
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def staged_files(folder: Path, what: str = "files") -> Iterator[Path]:
    """``with staged_files(out) as tmp:`` write several files into ``tmp`` (``.tmp-OUT`` beside
    ``out``); complete, each is renamed into ``out``, whose other files stay (unlike
    :func:`atomic_folder`, which replaces the folder: ``out`` may be the user's). A failed write
    removes ``tmp`` and is one :class:`UserError`; ``out`` then holds none of the new files."""
    folder = Path(folder)
    tmp = tmp_name(folder)
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        write_point(tmp)
        yield tmp
        folder.mkdir(parents=True, exist_ok=True)
        for path in sorted(tmp.rglob("*")):
            target = folder / path.relative_to(tmp)
            if path.is_dir():
                target.mkdir(exist_ok=True)
            else:
                os.replace(path, target)
        fsync_dir(folder)
    except WRITE_ERRORS as err:
        raise write_failure(what, folder, err, "nothing was written there") from err
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_text_atomic(path: Path, text: str, what: str = "file") -> None:
    with atomic_file(path, what) as tmp:
        tmp.write_text(text)


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
