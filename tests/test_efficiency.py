"""The efficiency knobs do what they say: gradient checkpointing changes memory, not maths; bf16
autocast trains; LocalSGD trains on two processes. (Their cost is measured by
benchmarks/speed/knobs.py; see the "Efficient training" table in docs/benchmarks.md.)"""

import json
import os
import subprocess
import sys

import torch

from classifier_fixtures import REPO, make_corpus, make_tiny, read_jsonl, train_argv
from gan_accel.classifier.config import ClassifierModelArguments
from gan_accel.classifier.model import load_model
from helpers import TINY_GAN, load_script

train_gan = load_script("train_gan").main


def test_gradient_checkpointing_gives_the_same_update(tmp_path):
    corpus = make_corpus(tmp_path / "data", n_train=64, n_val=8)
    tiny = make_tiny(tmp_path / "tiny", corpus["train"])
    batch = {
        "input_ids": torch.randint(5, 100, (4, 16)),
        "attention_mask": torch.ones(4, 16, dtype=torch.long),
        "labels": torch.tensor([0, 1, 1, 0]),
    }
    grads = {}
    for checkpointing in (False, True):
        torch.manual_seed(0)  # the same new head
        model = load_model(
            ClassifierModelArguments(model_name_or_path=str(tiny), gradient_checkpointing=checkpointing),
            ["negative", "positive"],
        )
        model.train()
        torch.manual_seed(1)  # the same dropout masks (checkpointing replays them in backward)
        model(**batch).loss.backward()
        grads[checkpointing] = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        flag = getattr(model, "is_activation_checkpointing", None)
        assert (flag if flag is not None else model.is_gradient_checkpointing) is checkpointing
    assert grads[True].keys() == grads[False].keys()
    for name, g in grads[False].items():
        torch.testing.assert_close(grads[True][name], g, rtol=1e-5, atol=1e-6, msg=name)


def test_bf16_autocast_trains_the_gan(tmp_path):
    common = [*TINY_GAN, "--max_steps", "4", "--log_every", "2", "--checkpointing_steps", "0"]
    assert train_gan([*common, "--output_dir", str(tmp_path / "fp32")]) == 0
    from benchmarks.common import reset_accelerate

    reset_accelerate()  # Accelerate's precision is process-wide
    try:
        assert train_gan([*common, "--output_dir", str(tmp_path / "bf16"), "--mixed_precision", "bf16"]) == 0
    finally:
        reset_accelerate()
    fp32 = read_jsonl(tmp_path / "fp32" / "metrics.jsonl")[-1]
    bf16 = read_jsonl(tmp_path / "bf16" / "metrics.jsonl")[-1]
    assert json.loads((tmp_path / "bf16" / "config.json").read_text())["mixed_precision"] == "bf16"
    assert all(isinstance(bf16[k], float) for k in ("loss/D", "loss/G"))  # finite numbers, not "nan"
    assert bf16["loss/D"] != fp32["loss/D"]  # autocast really ran in lower precision
    assert abs(bf16["loss/D"] - fp32["loss/D"]) < 0.1  # ... and trained the same model


def test_local_sgd_trains_on_two_processes(tmp_path):
    corpus = make_corpus(tmp_path / "data", n_train=128, n_val=21)
    tiny = make_tiny(tmp_path / "tiny", corpus["train"])
    out = tmp_path / "out"
    argv = train_argv(corpus, tiny, out, "--num_train_epochs", "1", "--local_sgd_steps", "2", "--log_every", "1")
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(REPO / "scripts" / "train_classifier.py"),
            *argv,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "eval_results.json").read_text())
    assert results["final"]["eval/samples"] == 21
    state = json.loads((out / "checkpoints" / "step_00000004" / "trainer_state.json").read_text())
    assert state["num_processes"] == 2 and state["config"]["local_sgd_steps"] == 2
