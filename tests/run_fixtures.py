"""Shared by the run-folder tests: a finished tiny GAN run to copy, snapshots of folders, and
the one-line-error assertion of the bad-input tests."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.common import reset_accelerate
from helpers import ROOT, TINY_GAN, load_script

train_gan = load_script("train_gan").main

# 4 G updates, a checkpoint every 2: step_00000002 and step_00000004, a log line per update.
BASE_FLAGS = [*TINY_GAN, "--max_steps", "4", "--checkpointing_steps", "2", "--log_every", "1"]


def run_gan(out: Path, *extra: str) -> int:
    reset_accelerate()
    return train_gan([*BASE_FLAGS, "--output_dir", str(out), *extra])


def copy_run(base: Path, dest: Path) -> Path:
    shutil.copytree(base, dest, copy_function=shutil.copy2)  # copy2 keeps mtimes
    return dest


def snapshot(root: Path) -> dict:
    """Every file and folder under ``root`` with its size, mtime and content hash."""
    if not root.exists():
        return {}
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.stat()
        digest = hashlib.sha1(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[str(path.relative_to(root))] = (st.st_size if path.is_file() else 0, st.st_mtime_ns, digest)
    return out


def user_error(main, argv, capsys, bar: str = "") -> str:
    """Run ``main(argv)``; assert exit code 2 and exactly one ``error:`` line on stderr, besides
    the lines of the progress bar named ``bar`` for errors raised during training."""
    reset_accelerate()
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    # A closed bar leaves its clearing (spaces, then a carriage return) when an error comes after it.
    lines = [line for line in capsys.readouterr().err.strip().splitlines() if line.strip()]
    err = [line for line in lines if not (bar and line.startswith(f"{bar}:"))]
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], err
    return err[0]


class LockHolder:
    """A real second process that holds the run folder's lock until stopped."""

    def __init__(self, folder: Path) -> None:
        code = (
            "import sys, time; from gan_accel.loop.lock import RunLock; "
            "l = RunLock(sys.argv[1]); l.acquire(); print('locked', flush=True); time.sleep(300)"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, str(folder)],
            stdout=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )
        deadline = time.time() + 60
        assert self.proc.stdout.readline().strip() == "locked" and time.time() < deadline

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
