"""docs/engine.md's second example, docs/infogan_example.py: it runs, draws its code-by-row grid,
gives one-line errors for its own flags, and resumes bit-exactly after a real SIGTERM on 1 process
and after a kill past a checkpoint on 2 processes."""

import os
import runpy
import shutil
import signal
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from benchmarks.common import reset_accelerate
from helpers import GRADIENT_LEAK, ROOT, one_line_error, read_jsonl

EXAMPLE = ROOT / "docs" / "infogan_example.py"
# Tiny: 6 updates of batch 16 on the 16 px digits.
FLAGS = ["--batch_size", "16", "--log_every", "1", "--sample_every", "3", "--max_steps", "6"]


def example() -> dict:
    reset_accelerate()
    return runpy.run_path(str(EXAMPLE))


def weights_and_optimizers(ckpt) -> dict:
    """G, Q, D (prepare order) and both optimizers' states of one checkpoint."""
    out = {}
    for name in ("model.safetensors", "model_1.safetensors", "model_2.safetensors"):
        out.update({f"{name}.{k}": v for k, v in load_file(str(ckpt / name)).items()})
    for name in ("optimizer.bin", "optimizer_1.bin"):
        for idx, state in torch.load(ckpt / name, weights_only=True)["state"].items():
            out.update({f"{name}.{idx}.{k}": v for k, v in state.items()})
    return out


def assert_same_step_6(a, b):
    x = weights_and_optimizers(a / "checkpoints" / "step_00000006")
    y = weights_and_optimizers(b / "checkpoints" / "step_00000006")
    assert x.keys() == y.keys() and len(x) > 10
    assert all(torch.equal(x[k], y[k]) for k in x), [k for k in x if not torch.equal(x[k], y[k])]


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """One uninterrupted 6-step run, shared by the tests below."""
    out = tmp_path_factory.mktemp("infogan") / "straight"
    assert example()["main"](["--output_dir", str(out), *FLAGS, "--checkpointing_steps", "0"]) == 0
    return out


def test_the_example_trains_and_draws_a_row_per_code_value(straight):
    from PIL import Image

    assert (straight / "generator.pt").is_file()
    assert [r["step"] for r in read_jsonl(straight / "metrics.jsonl")] == list(range(1, 7))
    record = read_jsonl(straight / "metrics.jsonl")[-1]
    assert {"loss/D", "loss/G", "info/categorical", "info/continuous", "lr/GQ", "lr/D"} <= record.keys()
    # --sample_every 3 and the end: steps 3 and 6. 10 rows (c = 0..9) of 8 columns of 16 px, 2 px borders.
    assert sorted(p.name for p in (straight / "samples").iterdir()) == ["step_000003.png", "step_000006.png"]
    assert Image.open(straight / "samples" / "step_000006.png").size == (8 * 18 + 2, 10 * 18 + 2)


def test_a_sigterm_then_resume_equals_the_straight_run(tmp_path, straight, capsys):
    module = example()
    from gan_accel.config import RunArguments

    run = tmp_path / "split"

    def sigterm_at_step_3(state):
        if state.step == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # caught by the run: checkpoint at step 3, then stop

    args = module["InfoGANArguments"](batch_size=16, sample_every=3, max_steps=6)
    run_args = RunArguments(output_dir=str(run), log_every=1, checkpointing_steps=0)
    module["InfoGAN"](args, run_args, on_update=sigterm_at_step_3).train()
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_00000003"]
    assert not (run / "generator.pt").exists()  # not finished: no export
    resume = ["--output_dir", str(run), *FLAGS, "--checkpointing_steps", "0", "--resume_from_checkpoint", "latest"]
    assert example()["main"](resume) == 0
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == list(range(1, 7))
    assert_same_step_6(straight, run)
    assert (run / "samples" / "step_000006.png").read_bytes() == (
        straight / "samples" / "step_000006.png"
    ).read_bytes()
    assert GRADIENT_LEAK not in capsys.readouterr().out  # D frozen in GQ's phase, detached fakes in D's


def torchrun(*args: str) -> None:
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(EXAMPLE)]
    proc = subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_two_processes_resume_exactly(tmp_path):
    flags = [*FLAGS, "--batch_size", "8", "--checkpointing_steps", "3"]  # 2 x 8: the global batch of 16
    torchrun("--output_dir", str(tmp_path / "straight"), *flags)
    # The same run as if it had been killed after its step-3 checkpoint, resumed by 2 processes.
    shutil.copytree(tmp_path / "straight", tmp_path / "split")
    shutil.rmtree(tmp_path / "split" / "checkpoints" / "step_00000006")
    (tmp_path / "split" / "generator.pt").unlink()
    torchrun("--output_dir", str(tmp_path / "split"), *flags, "--resume_from_checkpoint", "latest")
    assert [r["step"] for r in read_jsonl(tmp_path / "split" / "metrics.jsonl")] == list(range(1, 7))
    assert_same_step_6(tmp_path / "straight", tmp_path / "split")
    assert (tmp_path / "split" / "generator.pt").is_file()


def test_one_process_resumes_two_on_the_same_global_batch(tmp_path, capsys):
    """2 x 8 resumed by 1 process: --batch_size 16 (the same global batch) continues, in one line
    that says so; --batch_size 8 (half of it) is a batch change, refused in global-batch terms."""
    flags = [*FLAGS, "--batch_size", "8", "--checkpointing_steps", "3"]
    torchrun("--output_dir", str(tmp_path / "run"), *flags, "--max_steps", "3")
    resume = ["--output_dir", str(tmp_path / "run"), *FLAGS, "--resume_from_checkpoint", "latest"]
    line = one_line_error(example()["main"], [*resume, "--batch_size", "8"], capsys)
    assert "(global batch 16) -> 8 x 1 process (global batch 8, or --batch_size 16 for the same one)" in line
    assert example()["main"]([*resume, "--batch_size", "16"]) == 0
    assert "on the same global batch" in capsys.readouterr().out
    assert [r["step"] for r in read_jsonl(tmp_path / "run" / "metrics.jsonl")] == list(range(1, 7))


@pytest.mark.parametrize(
    "flags,match",
    [
        (["--num_categories", "1"], "--num_categories must be >= 2; got 1"),
        (["--info_weight", "-1"], "--info_weight must be >= 0"),
        (["--batch_size", "4096"], "--batch_size 4096 x 1 processes is larger than the dataset (1797 images)"),
    ],
)
def test_its_own_flags_fail_in_one_line_with_nothing_written(tmp_path, capsys, flags, match):
    line = one_line_error(example()["main"], ["--output_dir", str(tmp_path / "run"), *flags], capsys)
    assert match in line
    assert not (tmp_path / "run").exists()
