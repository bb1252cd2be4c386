"""Distillation on two processes (torchrun, gloo on CPU): the teacher is placed without DDP (it
has nothing to train, and DDP refuses such a module), the logit cache is computed on shards and
gathered into the same logits as on one process, and the teacher's and the student's evaluation
counts equal the validation size (101 does not split evenly over 2 processes)."""

import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from classifier_fixtures import REPO, single_thread  # noqa: E402
from distill_fixtures import distill_argv, distill_in_process, make_teacher  # noqa: E402

one_thread = pytest.fixture(scope="module", autouse=True)(single_thread)


def test_two_processes_give_the_same_counts_and_cache_as_one(tmp_path):
    setup = make_teacher(tmp_path, epochs=1)  # its quality does not matter here
    flags = ["--student_from_teacher", "--max_steps", "6", "--cache_teacher_logits", "--eval_batch_size", "8"]
    single = distill_in_process(distill_argv(setup, tmp_path / "single", *flags))
    env = {
        **os.environ,
        "ACCELERATE_USE_CPU": "1",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        str(REPO / "scripts" / "distill_classifier.py"),
        *distill_argv(setup, tmp_path / "ddp", *flags),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "processes: 2" in proc.stdout

    one, two = (json.loads((out / "eval_results.json").read_text()) for out in (single, tmp_path / "ddp"))
    for results in (one, two):
        assert results["teacher"]["eval/samples"] == results["student"]["final"]["eval/samples"] == 101
    # The teacher is the same network on the same examples: the same scores either way.
    assert two["teacher"] == pytest.approx(one["teacher"], abs=1e-6)
    logits_one, logits_two = (
        load_file(str(out / "teacher_logits.safetensors"))["logits"] for out in (single, tmp_path / "ddp")
    )
    assert logits_one.shape == logits_two.shape == (480, 2)
    torch.testing.assert_close(logits_two, logits_one, atol=1e-5, rtol=1e-5)
