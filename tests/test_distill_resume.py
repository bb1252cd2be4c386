"""Exact resume of a distillation run, with and without the teacher logit cache: interrupted at
update k by a real SIGTERM and resumed with --resume_from_checkpoint latest, it ends with the same
student, teacher, optimizer state, scheduler and counters as the run done straight through to 2k.
k falls mid-epoch, 2k lies in the next epoch, accumulation is 2 and the student's dropout is on.
With the cache, the resumed run reads the logits from the run folder instead of recomputing them."""

import json
import os
import signal
from pathlib import Path

import pytest
import torch

from classifier_fixtures import single_thread  # noqa: E402
from distill_fixtures import distill_argv, distill_in_process, make_teacher  # noqa: E402
from test_engine import checkpoint_tensors  # noqa: E402

one_thread = pytest.fixture(scope="module", autouse=True)(single_thread)

K = 8  # 480 examples / batch 16 / accumulation 2 = 15 updates an epoch: 8 is mid-epoch 0, 16 in epoch 1


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return make_teacher(tmp_path_factory.mktemp("distill_resume"))


def argv_for(setup, out, *extra):
    return distill_argv(
        setup,
        out,
        "--student_from_teacher",
        "--max_steps",
        str(2 * K),
        "--gradient_accumulation_steps",
        "2",
        "--eval_every",
        "5",
        "--weight_decay",
        "0.01",
        *extra,
    )


def interrupt_at(step):
    def on_update(state):
        if state.step == step:
            os.kill(os.getpid(), signal.SIGTERM)  # handled by the run's graceful stop: checkpoint, then stop

    return on_update


def assert_same_tensors(a: Path, b: Path) -> None:
    ta, tb = checkpoint_tensors(a), checkpoint_tensors(b)  # weights and optimizer states
    assert ta.keys() == tb.keys() and "model_1.safetensors.classifier.weight" in ta  # student and teacher
    different = [key for key in ta if not torch.equal(ta[key], tb[key])]
    assert not different, different


def assert_same(a: Path, b: Path) -> None:
    assert_same_tensors(a, b)
    assert torch.load(a / "scheduler.bin", weights_only=False) == torch.load(b / "scheduler.bin", weights_only=False)
    sa, sb = (json.loads((p / "trainer_state.json").read_text())["state"] for p in (a, b))
    assert sa == sb and sa["epoch"] == 1


@pytest.mark.parametrize("cache", [False, True], ids=["teacher_forward", "cached_logits"])
def test_k_plus_resume_plus_k_equals_2k(setup, tmp_path, capsys, cache):
    extra = ["--cache_teacher_logits"] if cache else []
    straight = distill_in_process(argv_for(setup, tmp_path / "straight", *extra))
    split = tmp_path / "split"
    distill_in_process(argv_for(setup, split, *extra), on_update=interrupt_at(K))
    assert [p.name for p in (split / "checkpoints").iterdir()] == [f"step_{K:08d}"]
    assert not (split / "eval_results.json").exists()  # stopped, not finished
    assert (split / "teacher_logits.safetensors").is_file() == cache
    capsys.readouterr()
    distill_in_process(argv_for(setup, split, *extra, "--resume_from_checkpoint", "latest"))
    if cache:
        assert "reused from the run folder" in capsys.readouterr().out
        assert json.loads((split / "eval_results.json").read_text())["teacher_cache_reused"] is True
    final = f"step_{2 * K:08d}"
    assert_same(straight / "checkpoints" / final, split / "checkpoints" / final)


def test_the_comparison_can_fail(setup, tmp_path):
    # Guards the test above against comparing two things that cannot differ: another temperature
    # gives other weights.
    a = distill_in_process(argv_for(setup, tmp_path / "a", "--max_steps", "3"))
    b = distill_in_process(argv_for(setup, tmp_path / "b", "--max_steps", "3", "--temperature", "4"))
    with pytest.raises(AssertionError):
        assert_same_tensors(a / "checkpoints" / "step_00000003", b / "checkpoints" / "step_00000003")
