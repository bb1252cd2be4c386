"""Two processes on CPU (gloo, through torchrun: fresh processes, since forking a process whose
OpenMP pool is already running can deadlock in the children): the evaluated sample count equals
the validation size although 101 does not split over 2 processes, and the LR schedule, sized for
Accelerate's num_processes scheduler ticks per update, ends at exactly zero at the last update
(not before)."""

import json
import os
import subprocess
import sys

import pytest

from classifier_fixtures import REPO, make_corpus, make_tiny, read_jsonl, single_thread, train_argv  # noqa: E402

one_thread = pytest.fixture(scope="module", autouse=True)(single_thread)


def torchrun_two_cpu_processes(argv) -> None:
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
        str(REPO / "scripts" / "train_classifier.py"),
        *argv,
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_two_processes_eval_count_and_schedule_end(tmp_path):
    corpus = make_corpus(tmp_path / "data")  # 480 train (30 batches of 16), 101 validation
    tiny = make_tiny(tmp_path / "tiny", corpus["train"])
    out = tmp_path / "out"
    argv = train_argv(
        corpus,
        tiny,
        out,
        "--num_train_epochs",
        "1",
        "--gradient_accumulation_steps",
        "2",
        "--log_every",
        "1",
        "--eval_batch_size",
        "8",
    )
    torchrun_two_cpu_processes(argv)

    results = json.loads((out / "eval_results.json").read_text())
    assert results["final"]["eval/samples"] == 101  # not 102: duplicates of the padded last batch dropped
    # 30 batches -> 15 per process -> 8 updates (the last one a single micro-batch); the scheduler
    # ticks twice per update: 16 ticks, so the LR is zero exactly after update 8.
    lrs = {r["step"]: r["lr/model"] for r in read_jsonl(out / "metrics.jsonl") if "lr/model" in r}
    assert sorted(lrs) == list(range(1, 9))
    assert lrs[8] == 0.0 and lrs[7] > 0.0 and results["final_lr"] == 0.0
    # Warm-up: ceil(0.1 x 8) = 1 update = 2 ticks, so the peak is reached after update 1, then decays.
    assert lrs[1] == pytest.approx(1e-3) and all(lrs[s] > lrs[s + 1] for s in range(1, 8))
    state = json.loads((out / "checkpoints" / "step_00000008" / "trainer_state.json").read_text())
    assert state["num_processes"] == 2
    assert sorted(p.name for p in (out / "checkpoints" / "step_00000008").glob("random_states_*")) == [
        "random_states_0.pkl",
        "random_states_1.pkl",
    ]
