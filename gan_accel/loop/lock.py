"""An exclusive lock on a run folder, so two runs never write into the same one at once.

A cluster re-queue of ``--resume_from_checkpoint latest`` while the old job still runs would
otherwise interleave ``metrics.jsonl``, mix the checkpoints of two runs and rewrite
``config.json``. The lock is ``OUTPUT_DIR/run.lock``, holding ``host pid`` of its holder and
``flock``-ed while the run lives: the kernel drops an flock when its process dies, however it
dies, so a lock file left by a killed run is recognised as stale and taken over (with a warning).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import socket
from pathlib import Path
from typing import Optional, Tuple

from ..errors import UserError
from ..writes import write_point

LOCK_FILE = "run.lock"
log = logging.getLogger(__name__)
# Locks held by this process, by path. A process trains one run at a time, so an earlier run in
# this process that ended without releasing (an exception left it, e.g. in a test or a notebook)
# is over: its lock is released for the new run, as a dead process's would be.
_HELD: dict = {}


def _describe(holder: Tuple[str, Optional[int]]) -> str:
    host, pid = holder
    return f"host {host or '?'}, pid {pid if pid is not None else '?'}"


def _read_holder(fd: int) -> Tuple[str, Optional[int]]:
    # Read through the fd we hold: opening the path again is not needed and keeps one open file.
    text = os.pread(fd, 4096, 0).decode("utf-8", "replace").split()
    host = text[0] if text else ""
    pid = int(text[1]) if len(text) > 1 and text[1].isdigit() else None
    return host, pid


class RunLock:
    """``acquire()`` or raise :class:`UserError` naming the holder; ``release()`` (also at exit)."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / LOCK_FILE
        self._fd: Optional[int] = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        earlier = _HELD.get(os.path.abspath(self.path))
        if earlier is not None and earlier is not self:
            earlier.release()
        while self._fd is None:
            existed = self.path.exists()
            try:
                write_point(self.path)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as err:
                if not existed:  # a failing disk may leave the empty file it began: not ours to keep
                    with contextlib.suppress(OSError):
                        self.path.unlink()
                raise UserError(
                    f"--output_dir {self.path.parent}: cannot write there ({err.strerror}); choose a writable folder"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise UserError(
                    f"--output_dir {self.path.parent}: in use by another run ({_describe(holder)}); "
                    "wait for it to end, stop it, or choose another folder"
                ) from None
            # The previous holder unlinks the file on release: if we locked an inode that is no
            # longer at this path, a third process may hold the new file. Try again.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            self._take_over(fd)

    def _take_over(self, fd: int) -> None:
        holder = _read_holder(fd)
        me = (socket.gethostname(), os.getpid())
        if holder[1] is not None and holder != me:
            # The flock was free, so its holder has exited (the kernel drops an flock with its
            # process), whatever pid reuse may say since.
            log.warning(
                "--output_dir %s: taking over a stale lock of a run that is gone (%s)",
                self.path.parent,
                _describe(holder),
            )
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{me[0]} {me[1]}\n".encode(), 0)
        self._fd = fd
        _HELD[os.path.abspath(self.path)] = self
        atexit.register(self.release)

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        _HELD.pop(os.path.abspath(self.path), None)
        try:
            self.path.unlink()  # while still locked, so no one else's fresh lock is removed
        except OSError:
            pass
        os.close(fd)
