"""Every write of every command can be the one that fails (a full disk, a read-only file system,
an I/O error), injected through gan_accel.writes: the command ends in one ``error:`` line naming
the path and a flag it accepts, exits non-zero without a traceback, leaves no empty or partial
file, and the same command run again without the fault succeeds (a run resumes).

The clean run of each command is counted first; the default run fails one drawn write per
command, ``-m slow`` every write with each of the three errors."""

from __future__ import annotations

import errno
import json
import random
import re
import shutil
from pathlib import Path

import pytest

from benchmarks.common import reset_accelerate
from gan_accel.writes import injected
from helpers import TINY_GAN, load_script

CODES = (errno.ENOSPC, errno.EROFS, errno.EIO)
TRAIN_FLAGS = [*TINY_GAN, "--max_steps", "4", "--checkpointing_steps", "2", "--log_every", "1"]
TRAIN_FULL = [*TRAIN_FLAGS, "--num_grids", "2", "--num_evaluations", "1", "--eval_num_images", "100"]


def _main(name):
    return load_script(name).main


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A finished tiny run (grids, the GIF, an evaluation, plots, exports) to read from."""
    run = tmp_path_factory.mktemp("base") / "run"
    reset_accelerate()
    assert _main("train_gan")([*TRAIN_FULL, "--output_dir", str(run)]) == 0
    return run


# name -> (script, argv from (work folder, base run)); each writes only under the work folder.
COMMANDS = {
    "train-gan": ("train_gan", lambda w, b: [*TRAIN_FULL, "--output_dir", str(w / "run")]),
    "sample-gan": (
        "sample_gan",
        lambda w, b: [
            "--generator",
            str(b / "generator"),
            "--num_images",
            "3",
            "--output_dir",
            str(w / "png"),
            "--grid",
            str(w / "grid.png"),
        ],
    ),
    "sample-gan-interpolate": (
        "sample_gan",
        lambda w, b: (
            ["--generator", str(b / "generator"), "--num_images", "2", "--interpolate", "3"]
            + ["--output_dir", str(w / "png")]
        ),
    ),
    "export-onnx": (
        "export_onnx",
        lambda w, b: ["--generator", str(b / "generator"), "--output", str(w / "g.onnx")],
    ),
    "evaluate-gan": (
        "evaluate_gan",
        lambda w, b: (
            ["--generator", str(b / "generator"), "--num_images", "100", "--bootstrap", "0", "--nearest"]
            + ["--nearest_rows", "2", "--output_dir", str(w / "eval")]
        ),
    ),
    "plot-run": ("plot_run", lambda w, b: [str(b), "--output_dir", str(w / "plots")]),
}


def run_command(name, work, base_run):
    script, argv = COMMANDS[name]
    reset_accelerate()
    try:
        return _main(script)(argv(work, base_run))
    except SystemExit as stop:
        return stop.code


def files_under(folder: Path) -> dict:
    return {p: p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


def count_writes(name, tmp_path, base_run) -> int:
    with injected(0) as faults:
        assert run_command(name, tmp_path / "clean", base_run) == 0
    assert faults.paths, f"{name} wrote nothing through gan_accel.writes"
    return len(faults.paths)


def check_fails_cleanly(name, k, code, tmp_path, base_run, capsys):
    work = tmp_path / f"k{k}"
    work.mkdir()
    script, argv = COMMANDS[name]
    flags = {a for a in argv(work, base_run) if a.startswith("--")} | {"--output_dir"}
    base_before = files_under(base_run)
    capsys.readouterr()
    with injected(k, code) as faults:
        rc = run_command(name, work, base_run)
    err = capsys.readouterr().err
    failed = faults.paths[k - 1]
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    if rc == 0:
        # Only best-effort writes (a metrics line, a plot during training) may fail without
        # ending the run, and then with a warning that names the path.
        assert "warning:" in err and failed.name.replace(".tmp-", "") in err, err
    else:
        assert rc == 2 and len(lines) == 1, err
        line = lines[0]
        named = str(failed).replace(".tmp-", "")
        assert named in line or str(failed.parent) in line, (line, failed)
        assert any(flag in re.findall(r"--\w+", line) for flag in flags), (line, flags)
    for path, size in files_under(work).items():
        assert size > 0, f"empty file {path} after a failed write ({line if rc else err})"
        assert not path.name.startswith((".tmp-", ".unchecked-")), path
        if path.suffix == ".json":
            json.loads(path.read_text())
    assert files_under(base_run) == base_before  # the inputs are untouched
    # The same command, without the fault, finishes (a training run resumes from its checkpoint).
    if name == "train-gan" and (work / "run" / "checkpoints").is_dir():
        argv_again = [*argv(work, base_run), "--resume_from_checkpoint", "latest"]
        reset_accelerate()
        assert _main(script)(argv_again) == 0
    else:
        assert run_command(name, work, base_run) == 0


_COUNTS: dict = {}


def writes_of(name, tmp_path, base_run) -> int:
    if name not in _COUNTS:
        _COUNTS[name] = count_writes(name, tmp_path, base_run)
    return _COUNTS[name]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_drawn_write_fails_cleanly(name, tmp_path, base, capsys):
    n = writes_of(name, tmp_path, base)
    rng = random.Random(f"{name}")  # a fixed draw per command: a failure reproduces
    k = rng.randint(2, n) if n > 1 else 1  # the first, the check before the work, has its own tests
    check_fails_cleanly(name, k, CODES[k % len(CODES)], tmp_path, base, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("code", CODES, ids=[errno.errorcode[c] for c in CODES])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_write_fails_cleanly(name, code, tmp_path, base, capsys):
    for k in range(1, writes_of(name, tmp_path, base) + 1):
        check_fails_cleanly(name, k, code, tmp_path, base, capsys)
        shutil.rmtree(tmp_path / f"k{k}")
