"""Exact resume: a run interrupted at update k (a real SIGTERM, caught by the shared GracefulStop)
and resumed with ``--resume_from_checkpoint latest`` ends with the same weights, optimizer state,
scheduler and step as the same run done straight through. k falls mid-epoch 0, exactly at the end
of epoch 0 and inside epoch 1; accumulation is 2 and dropout is active, so the data order (also
across epoch boundaries), the accumulation clock and the RNG all have to come back."""

import json
import os
import signal
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from classifier_fixtures import make_corpus, make_tiny, single_thread, train_argv, train_in_process  # noqa: E402

one_thread = pytest.fixture(scope="module", autouse=True)(single_thread)

K, TOTAL = 8, 20  # 480 examples / batch 16 / accumulation 2 = 15 updates per epoch


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("resume")
    corpus = make_corpus(folder / "data")
    return folder, corpus, make_tiny(folder / "tiny", corpus["train"])


def argv_for(setup, name, *extra):
    folder, corpus, tiny = setup
    return train_argv(
        corpus,
        tiny,
        folder / name,
        "--max_steps",
        str(TOTAL),
        "--gradient_accumulation_steps",
        "2",
        "--eval_steps",
        "5",
        "--weight_decay",
        "0.01",
        *extra,
    )


def interrupt_at(step):
    def on_update(state):
        if state.step == step:
            os.kill(os.getpid(), signal.SIGTERM)  # handled by GracefulStop: checkpoint, then stop

    return on_update


def checkpoint(out: Path, step: int) -> Path:
    return out / "checkpoints" / f"step_{step:08d}"


def assert_same_state(a: Path, b: Path) -> None:
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert wa.keys() == wb.keys()
    for key in wa:
        assert torch.equal(wa[key], wb[key]), key
    oa, ob = (torch.load(p / "optimizer.bin", weights_only=False) for p in (a, b))
    assert oa["param_groups"] == ob["param_groups"]
    assert oa["state"].keys() == ob["state"].keys()
    for i in oa["state"]:
        for name, value in oa["state"][i].items():
            assert torch.equal(value, ob["state"][i][name]), (i, name)
    sa, sb = (torch.load(p / "scheduler.bin", weights_only=False) for p in (a, b))
    assert sa == sb
    ta, tb = (json.loads((p / "trainer_state.json").read_text())["state"] for p in (a, b))
    assert ta == tb


@pytest.fixture(scope="module")
def straight(setup):
    out = train_in_process(argv_for(setup, "straight"))
    assert json.loads((checkpoint(out, TOTAL) / "trainer_state.json").read_text())["state"]["epoch"] == 1
    return out


# Where the interruption falls, and the position its checkpoint must record: (step, epoch, epoch_start).
RESUME_POINTS = {
    "mid-epoch 0": (K, (K, 0, 2 * K * 16)),
    # The last update of epoch 0: the checkpoint already points at the start of epoch 1.
    "at the end of epoch 0": (15, (15, 1, 0)),
    # Past the first epoch: a prepared loader resets its sampler's epoch to its own pass counter
    # (0 in a freshly built loader) at every pass, so this replays epoch 0 unless the loop re-aligns it.
    "inside epoch 1": (17, (17, 1, 2 * 2 * 16)),
}


@pytest.mark.parametrize("where", list(RESUME_POINTS))
def test_interrupted_and_resumed_run_equals_straight_run(setup, straight, where):
    folder = setup[0]
    k, position = RESUME_POINTS[where]
    resumed = folder / f"resumed_{k}"
    train_in_process(argv_for(setup, resumed.name), on_update=interrupt_at(k))
    assert [p.name for p in (resumed / "checkpoints").iterdir()] == [f"step_{k:08d}"]
    assert not (resumed / "eval_results.json").exists()  # stopped, not finished
    state = json.loads((checkpoint(resumed, k) / "trainer_state.json").read_text())["state"]
    assert (state["step"], state["epoch"], state["epoch_start"]) == position

    train_in_process(argv_for(setup, resumed.name, "--resume_from_checkpoint", "latest"))
    assert_same_state(checkpoint(straight, TOTAL), checkpoint(resumed, TOTAL))
    # The evaluations after the resume match too (same weights at the same steps).
    evals = [
        {k: v for k, v in json.loads(line).items() if k != "time_s"}  # wall-clock time differs
        for out in (straight, resumed)
        for line in (out / "metrics.jsonl").read_text().splitlines()
        if "eval/accuracy" in line
    ]
    by_step = {}
    for record in evals:
        by_step.setdefault(record["step"], []).append(record)
    for step, records in by_step.items():
        assert all(r == records[0] for r in records), step


def test_the_check_can_fail_a_different_seed_differs(setup, straight):
    # Guards the test above against comparing two things that cannot differ.
    a = checkpoint(straight, TOTAL)
    b = checkpoint(train_in_process(argv_for(setup, "other_seed", "--seed", "1")), TOTAL)
    with pytest.raises(AssertionError):
        assert_same_state(a, b)


def test_resume_with_another_length_warns_that_the_schedule_is_resized(setup, capsys):
    folder, corpus, tiny = setup
    out = folder / "extended"
    train_in_process(argv_for(setup, "extended"), on_update=interrupt_at(K))
    capsys.readouterr()
    train_in_process(
        train_argv(
            corpus,
            tiny,
            out,
            "--max_steps",
            str(TOTAL + 4),
            "--gradient_accumulation_steps",
            "2",
            "--eval_steps",
            "5",
            "--weight_decay",
            "0.01",
            "--resume_from_checkpoint",
            "latest",
        )
    )
    assert "the linear schedule continues re-sized" in capsys.readouterr().out
    assert json.loads((out / "eval_results.json").read_text())["steps"] == TOTAL + 4
