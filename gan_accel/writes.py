"""The one place every file the project writes passes before it is written (:func:`write_point`),
and the flag each output came from (:func:`declare_output`).

A test (or ``GAN_ACCEL_FAIL_WRITE=K:ENOSPC`` in the environment) makes the K-th write fail the way
a full disk, a read-only file system or a failing drive does, leaving an empty file where the
write began: every write a command makes can be tried as the one that fails, as SQLite tries
every I/O. The flag lets the error name something the user can change (``--output_dir``,
``--output``, ``--grid``) instead of a generic "pass another path"."""

from __future__ import annotations

import errno
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional

FAIL_ENV = "GAN_ACCEL_FAIL_WRITE"


@dataclass
class WriteFaults:
    """Counts writes and fails the ``fail_at``-th (1-based; 0: none) with ``code``."""

    fail_at: int = 0
    code: int = errno.ENOSPC
    paths: List[Path] = field(default_factory=list)  # every write so far, in order

    def __post_init__(self) -> None:
        if self.fail_at < 0:
            raise ValueError(f"fail_at must be >= 0; got {self.fail_at}")
        if self.code not in errno.errorcode:
            raise ValueError(f"code must be an errno value; got {self.code}")


def _from_env() -> Optional[WriteFaults]:
    """``K:NAME`` (``3:EIO``) from the environment: a manual reproduction or a subprocess test."""
    text = os.environ.get(FAIL_ENV, "").strip()
    if not text:
        return None
    k, _, name = text.partition(":")
    return WriteFaults(int(k), getattr(errno, name or "ENOSPC"))


_faults: Optional[WriteFaults] = _from_env()


def write_point(path: Path) -> None:
    """Called just before ``path`` is written (a file, or a folder written as one piece). Under
    injection, counts the write and raises the injected error at the chosen one, after leaving an
    empty file where a real failure leaves one: the caller must clean up after itself."""
    faults = _faults
    if faults is None:
        return
    faults.paths.append(Path(path))
    if len(faults.paths) != faults.fail_at:
        return
    path = Path(path)
    if path.parent.is_dir() and not path.exists():
        path.touch()
    raise OSError(faults.code, os.strerror(faults.code))


@contextmanager
def injected(fail_at: int = 0, code: int = errno.ENOSPC) -> Iterator[WriteFaults]:
    """``with injected(3, errno.EIO) as faults:`` the third write fails; ``faults.paths`` lists the
    writes made (``fail_at=0``: count them only)."""
    global _faults
    before, _faults = _faults, WriteFaults(fail_at, code)
    try:
        yield _faults
    finally:
        _faults = before


# ---- which flag an output came from -------------------------------------------------------------
_outputs: Dict[Path, str] = {}


def declare_output(flag: str, path: Optional[os.PathLike]) -> None:
    """``path`` (a folder or a file) is where ``flag`` sends this command's output."""
    if path:
        _outputs[Path(path).resolve()] = flag


def forget_outputs() -> None:
    """At the start of each command (``cli_entry``): the flags of the one before do not apply."""
    _outputs.clear()


def output_flag(path: os.PathLike, default: str = "--output_dir") -> str:
    """The flag whose output ``path`` is part of (the nearest declared one above it)."""
    resolved = Path(path).resolve()
    for place in (resolved, *resolved.parents):
        if place in _outputs:
            return _outputs[place]
    return default
