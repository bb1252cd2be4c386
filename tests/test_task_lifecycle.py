"""A researcher's own task, declared here and nowhere else, and what the runner promises it
whatever its code does: a start that fails (a bad flag, a bug in the task's own ``build()``,
``read_data()``, ``check()`` or ``hooks()``, an epoch without a batch) is one line and leaves the
folder as startable as it found it; torchrun's processes on a machine without a GPU form one run;
``--help`` keeps the docstring's lines; without a terminal, each log step prints a line.

The file is also the task's script (torchrun runs it)::

    python tests/test_task_lifecycle.py --output_dir runs/toy
    python tests/test_task_lifecycle.py --output_dir runs/toy --max_steps 8 --resume_from_checkpoint latest
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from gan_accel.config import FREE
from gan_accel.data import ResumableSampler
from gan_accel.engine import Network, Optimizer, Phase, Recipe, adam
from gan_accel.runner import Plan, Task

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
TASK_METHODS = ("read_data", "check", "build", "hooks")


@dataclass
class ToyArguments:
    """Settings of the toy task."""

    samples: int = field(default=16, metadata={"help": "Random points to fit."})
    batch_size: int = field(default=4, metadata={"help": "Points per batch."})
    max_steps: int = field(default=4, metadata={"resume": FREE, "help": "Updates to train for."})
    bug_in: str = field(default="", metadata={"resume": FREE, "help": "The task method that raises (a bug)."})
    sized: bool = field(default=True, metadata={"help": "The sampler has a length."})


class UnsizedSampler(ResumableSampler):
    """A resumable sampler that does not know its length (as a stream would not)."""

    def __len__(self):
        raise TypeError("no length")


class Toy(Task):
    """Fit a line to random points.

    python tests/test_task_lifecycle.py --output_dir runs/toy
    python tests/test_task_lifecycle.py --output_dir runs/toy --max_steps 8 --resume_from_checkpoint latest
    """

    project = "toy"
    configs = {"args": ToyArguments}

    def bug(self, method: str) -> None:
        if self.args.bug_in == method:
            raise ValueError(f"a bug in {method}")

    def read_data(self) -> None:
        self.bug("read_data")
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(self.args.samples, 4, generator=g)
        self.y = self.x.sum(dim=1, keepdim=True)

    def check(self) -> None:
        self.bug("check")

    def build(self) -> Plan:
        self.bug("build")
        a, acc = self.args, self.accelerator

        def loss(s):
            mse = F.mse_loss(s.nets.W(self.x.to(acc.device)[s.batch]), self.y.to(acc.device)[s.batch])
            return mse, {"loss/mse": mse.detach()}

        recipe = Recipe(
            networks=[Network("W", nn.Linear(4, 1), optimizer="W")],
            optimizers=[Optimizer("W", adam(1e-2))],
            phases=[Phase("W", trains=["W"], loss=loss)],
            progress="W",
        )
        sampler = (ResumableSampler if a.sized else UnsizedSampler)(a.samples, seed=self.run_args.seed)
        loader = DataLoader(range(a.samples), batch_size=a.batch_size, sampler=sampler, drop_last=True)
        return Plan(recipe, loader, a.max_steps)

    def hooks(self) -> list:
        self.bug("hooks")
        return []


main = Toy.script()


def run(out: Path, *flags: str) -> int:
    from benchmarks.common import reset_accelerate

    reset_accelerate()
    return main(["--output_dir", str(out), "--checkpointing_steps", "2", "--log_every", "2", *flags])


def refused(out: Path, capsys, *flags: str) -> str:
    """Run; assert one ``error:`` line on stderr, no traceback and exit code 2; return the line."""
    with pytest.raises(SystemExit) as info:
        run(out, *flags)
    assert info.value.code == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("train:")]
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], err
    return err[0]


def files(folder: Path) -> dict:
    """Every file under ``folder`` with its content and modification time."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()
    }


@pytest.mark.parametrize("seed", ["-1", "4294967296"])
def test_a_seed_numpy_cannot_take_is_one_line_and_creates_nothing(tmp_path, capsys, seed):
    line = refused(tmp_path / "run", capsys, "--seed", seed)
    assert f"--seed must be in [0, 4294967295]; got {seed}" in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("method", TASK_METHODS)
def test_a_bug_in_a_task_method_is_one_line_and_the_fixed_command_starts(tmp_path, capsys, method):
    out = tmp_path / "new" / "run"  # neither folder exists: the start creates both
    line = refused(out, capsys, "--bug_in", method)
    assert line == f"error: Toy.{method}() raised ValueError: a bug in {method}"
    assert not (tmp_path / "new").exists()
    assert run(out, "--max_steps", "2") == 0
    assert (out / "checkpoints" / "step_00000002").is_dir()


def test_a_failed_start_in_a_folder_of_the_users_removes_only_what_it_wrote(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    refused(out, capsys, "--bug_in", "build", "--report_to", "tensorboard")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]  # no config.json, logs/ or run.lock
    assert run(out, "--max_steps", "2") == 0


def test_a_failed_resume_leaves_the_run_as_it_was(tmp_path, capsys):
    out = tmp_path / "run"
    assert run(out, "--max_steps", "2") == 0
    before = files(out)
    capsys.readouterr()  # the first run's bar
    refused(out, capsys, "--max_steps", "4", "--resume_from_checkpoint", "latest", "--bug_in", "build")
    assert files(out) == before  # config.json, rewritten by the start, is put back as it was
    assert run(out, "--max_steps", "4", "--resume_from_checkpoint", "latest") == 0


def test_debug_shows_the_tasks_own_traceback(tmp_path):
    from benchmarks.common import reset_accelerate

    reset_accelerate()
    with pytest.raises(ValueError, match="a bug in build") as info:
        main(["--output_dir", str(tmp_path / "run"), "--bug_in", "build", "--debug"])
    assert info.traceback[-1].name == "bug" and info.traceback[-2].name == "build"
    assert not (tmp_path / "run").exists()


@pytest.fixture
def spin_limit():
    """An engine that loops over empty epochs never returns: fail the test instead of hanging."""

    def spinning(signum, frame):
        raise TimeoutError("the engine looped over empty epochs")

    previous = signal.signal(signal.SIGALRM, spinning)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_an_epoch_without_a_batch_is_refused_before_training(tmp_path, capsys, spin_limit):
    line = refused(tmp_path / "run", capsys, "--samples", "3", "--batch_size", "4")
    assert "yields no batch" in line and "3 samples; --batch_size 4, full batches only" in line
    assert not (tmp_path / "run").exists()


def test_an_empty_epoch_of_a_loader_without_a_length_stops_rather_than_spins(tmp_path, capsys, spin_limit):
    line = refused(tmp_path / "run", capsys, "--samples", "3", "--batch_size", "4", "--no_sized")
    assert "yields no batch" in line and "--batch_size 4" in line
    assert not (tmp_path / "run").exists()  # refused before its first update: a failed start


def test_help_keeps_the_docstrings_lines(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert "python tests/test_task_lifecycle.py --output_dir runs/toy" in lines
    assert any(line.endswith("--max_steps 8 --resume_from_checkpoint latest") for line in lines)


def test_without_a_bar_each_log_step_prints_a_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert run(tmp_path / "run", "--max_steps", "4") == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert [line.split()[1] for line in printed] == ["2/4", "4/4"]
    assert all(" mse " in line and " sample_per_s " in line for line in printed), printed


def test_a_launcher_whose_processes_form_no_run_is_refused(tmp_path, capsys, monkeypatch):
    from gan_accel.loop import accel

    # Two processes announced, but a GPU machine's Accelerate (no GPU here) would make each a run of one.
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(accel, "accelerator_available", lambda: True)
    line = refused(tmp_path / "run", capsys)
    assert "the launcher started 2 processes (WORLD_SIZE)" in line
    assert not (tmp_path / "run").exists()


def test_torchrun_on_a_machine_without_a_gpu_forms_one_run(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "ACCELERATE_USE_CPU"}
    env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), TQDM_DISABLE="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(HERE)]
    out = tmp_path / "run"
    proc = subprocess.run(
        [*cmd, "--output_dir", str(out), "--max_steps", "2", "--checkpointing_steps", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "processes: 2" in proc.stdout and proc.stdout.count("Run folder:") == 1
    assert {p.name for p in (out / "checkpoints" / "step_00000002").glob("random_states_*")} == {
        "random_states_0.pkl",
        "random_states_1.pkl",
    }


if __name__ == "__main__":
    raise SystemExit(main())
