"""Two processes on CPU (gloo through torchrun): a 2-process CycleGAN run equals one process on
the same global batch. Instance norm couples no images of a batch, the random crops are drawn
per sample of the global batch, and every process queries an identical image pool with the
gathered fakes, so nothing depends on how the batch is split."""

import os
import subprocess
import sys

from cyclegan_fixtures import TINY_CYCLEGAN, checkpoint_tensors, make_domains
from helpers import ROOT, load_script, read_jsonl

train_cyclegan = load_script("train_cyclegan").main


def torchrun(args, timeout=300):
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        str(ROOT / "scripts" / "train_cyclegan.py"),
        *args,
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_two_processes_equal_one_process_on_the_global_batch(tmp_path):
    data = make_domains(tmp_path / "data", num_a=12, num_b=16)
    common = [
        *TINY_CYCLEGAN,
        "--dataset",
        "folder",
        "--data_dir",
        str(data),
        "--max_steps",
        "4",
        "--sample_every",
        "2",
        "--checkpointing_steps",
        "0",
        "--n_epochs",
        "1",
        "--n_epochs_decay",
        "1",
    ]
    single, ddp = tmp_path / "single", tmp_path / "ddp"
    assert train_cyclegan([*common, "--output_dir", str(single), "--batch_size", "8"]) == 0
    proc = torchrun([*common, "--output_dir", str(ddp), "--batch_size", "4"])
    assert "processes: 2" in proc.stdout

    a = checkpoint_tensors(single / "checkpoints" / "step_00000004")
    b = checkpoint_tensors(ddp / "checkpoints" / "step_00000004")
    assert a.keys() == b.keys() and int(a["pool_A.num_images"]) == 3  # the pools were full and swapping
    weights = [k for k in a if not k.startswith("optimizer") and a[k].is_floating_point()]
    worst = max((a[k].double() - b[k].double()).abs().max().item() for k in weights)
    assert worst < 1e-5, worst
    # Adam's moments hold raw gradients (up to ~10 here, the cycle loss weighs 10): compared relatively.
    moments = [k for k in a if k.startswith("optimizer") and a[k].is_floating_point()]
    relative = max(
        ((a[k].double() - b[k].double()).abs().max() / (a[k].double().abs().max() + 1e-8)).item() for k in moments
    )
    assert relative < 1e-4, relative

    # Written once: one metrics line per step, one grid per sample step, both exports.
    records = read_jsonl(ddp / "metrics.jsonl")
    assert [r["step"] for r in records] == [1, 2, 3, 4] and records[-1]["lr/G"] == 0.0
    assert sorted(p.name for p in (ddp / "samples").iterdir()) == ["step_000002.png", "step_000004.png"]
    assert (ddp / "generator_A2B" / "model.safetensors").is_file() and (
        ddp / "generator_B2A" / "model.safetensors"
    ).is_file()
