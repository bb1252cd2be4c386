"""Two processes on CPU (gloo through torchrun): a DDP run equals one process on the same global
batch, files are written once, and a 2-process run resumes exactly."""

import json
import math
import os
import shutil
import subprocess
import sys

import pytest
import torch

from helpers import ROOT, TINY_GAN, load_script, read_jsonl
from test_gan_train import tensors_of

train_gan = load_script("train_gan").main

# BN-free G and D: per-rank BatchNorm statistics (each rank normalises its own shard) are the one
# legitimate difference between 2 processes and 1.
EXACT = [
    *TINY_GAN,
    "--d_norm",
    "none",
    "--g_norm",
    "none",
    "--log_every",
    "1",
    "--checkpointing_steps",
    "0",
    "--sample_every",
    "3",
    "--lr_scheduler",
    "linear",
    "--warmup_steps",
    "1",
    "--ema_decay",
    "0.9",
]


def torchrun(args, timeout=300):
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        str(ROOT / "scripts" / "train_gan.py"),
        *args,
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.mark.parametrize("accum", [1, 2])
def test_two_processes_equal_one_process_on_the_global_batch(tmp_path, accum):
    steps = "6"
    single, ddp = tmp_path / "single", tmp_path / "ddp"
    assert (
        train_gan(
            [
                *EXACT,
                "--output_dir",
                str(single),
                "--batch_size",
                "32",
                "--max_steps",
                steps,
                "--gradient_accumulation_steps",
                str(accum),
            ]
        )
        == 0
    )
    proc = torchrun(
        [
            *EXACT,
            "--output_dir",
            str(ddp),
            "--batch_size",
            "16",
            "--max_steps",
            steps,
            "--gradient_accumulation_steps",
            str(accum),
        ]
    )
    assert "processes: 2" in proc.stdout
    assert proc.stdout.count("Run folder:") == 1  # printed by the main process only

    a = tensors_of(single / "checkpoints" / "step_00000006")
    b = tensors_of(ddp / "checkpoints" / "step_00000006")
    assert a.keys() == b.keys()
    worst = max((a[k].double() - b[k].double()).abs().max().item() for k in a)
    assert worst < 1e-5, worst

    # Written once: one metrics line per step, one grid per sample step, one export, both RNG files.
    assert [r["step"] for r in read_jsonl(ddp / "metrics.jsonl")] == list(range(1, 7))
    assert sorted(p.name for p in (ddp / "samples").iterdir()) == [
        "step_000003.png",
        "step_000006.png",
        "training.gif",
    ]
    assert {p.name for p in (ddp / "checkpoints" / "step_00000006").glob("random_states_*")} == {
        "random_states_0.pkl",
        "random_states_1.pkl",
    }
    assert (ddp / "generator" / "model.safetensors").is_file()
    # The schedule ends at zero on the last update with 2 processes too.
    assert read_jsonl(ddp / "metrics.jsonl")[-1]["lr/G"] == 0.0
    state = json.loads((ddp / "checkpoints" / "step_00000006" / "trainer_state.json").read_text())
    assert state["num_processes"] == 2 and state["state"]["micro_step"] == 6 * accum


def test_two_process_resume_is_exact(tmp_path):
    common = [*EXACT, "--batch_size", "16", "--lr_scheduler", "constant", "--checkpointing_steps", "2"]
    torchrun([*common, "--output_dir", str(tmp_path / "straight"), "--max_steps", "6"])
    # The same run as if it had died after its step-4 checkpoint (one 2-process start fewer than
    # running the first part separately): resumed by 2 processes, it must write the same step 6.
    shutil.copytree(tmp_path / "straight", tmp_path / "split")
    shutil.rmtree(tmp_path / "split" / "checkpoints" / "step_00000006")
    torchrun(
        [*common, "--output_dir", str(tmp_path / "split"), "--max_steps", "6", "--resume_from_checkpoint", "latest"]
    )
    assert [r["step"] for r in read_jsonl(tmp_path / "split" / "metrics.jsonl")] == list(range(1, 7))
    a = tensors_of(tmp_path / "straight" / "checkpoints" / "step_00000006")
    b = tensors_of(tmp_path / "split" / "checkpoints" / "step_00000006")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_two_processes_train_fastgan_with_the_r1_penalty(tmp_path):
    """FastGAN with R1, as the photo preset pairs them (here BN-free and tiny): the penalty's double
    backward runs through DDP on every D update and its value reaches the log (a DDP that refused
    it would end the run)."""
    torchrun(
        [
            *EXACT,
            "--arch",
            "fastgan",
            "--r1_gamma",
            "0.1",
            "--r1_interval",
            "1",
            "--output_dir",
            str(tmp_path / "o"),
            "--max_steps",
            "3",
        ]
    )
    r1 = [r["reg/r1"] for r in read_jsonl(tmp_path / "o" / "metrics.jsonl") if "reg/r1" in r]
    assert len(r1) == 3 and all(math.isfinite(v) and v > 0 for v in r1)


def test_the_same_global_batch_resumes_on_another_process_count(tmp_path, capsys):
    """2 x 16 resumed as 1 x 32, and 1 x 32 as 2 x 16, from the step-3 checkpoint: the learning
    rates of every update (a warm-up into a linear decay, across the resume) and the weights at
    step 6 are the straight run's. Another global batch is a batch change, said in its terms."""
    common = [*EXACT, "--warmup_steps", "4", "--max_steps", "6", "--checkpointing_steps", "3"]
    two, one = tmp_path / "two", tmp_path / "one"
    torchrun([*common, "--output_dir", str(two), "--batch_size", "16"])
    assert train_gan([*common, "--output_dir", str(one), "--batch_size", "32"]) == 0
    for straight in (two, one):
        shutil.copytree(straight, tmp_path / f"{straight.name}_split")
        shutil.rmtree(tmp_path / f"{straight.name}_split" / "checkpoints" / "step_00000006")
    resume = ["--resume_from_checkpoint", "latest"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:  # half the global batch: refused, nothing trained
        train_gan([*common, "--output_dir", str(tmp_path / "two_split"), "--batch_size", "16", *resume])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--batch_size 16 per process x 2 processes (global batch 32) -> 16 x 1 process (global batch 16" in err
    assert "--batch_size 32 for the same one" in err
    assert train_gan([*common, "--output_dir", str(tmp_path / "two_split"), "--batch_size", "32", *resume]) == 0
    assert "on the same global batch" in capsys.readouterr().out
    torchrun([*common, "--output_dir", str(tmp_path / "one_split"), "--batch_size", "16", *resume])
    for straight in (two, one):
        split = tmp_path / f"{straight.name}_split"

        def rates(run):
            return [(r["step"], r["lr/G"], r["lr/D"]) for r in read_jsonl(run / "metrics.jsonl")]

        assert [s for s, *_ in rates(split)] == list(range(1, 7))
        assert sum(rates(split), ()) == pytest.approx(sum(rates(straight), ()), rel=1e-9)
        a = tensors_of(straight / "checkpoints" / "step_00000006")
        b = tensors_of(split / "checkpoints" / "step_00000006")
        assert a.keys() == b.keys()
        worst = max((a[k].double() - b[k].double()).abs().max().item() for k in a if a[k].is_floating_point())
        assert worst < 1e-5, (straight.name, worst)
