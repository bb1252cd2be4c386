"""A budgeted CPU run's precision, measured: the decision from timings (injected here: a test
machine's own timings would make it flaky), the probe's alternation and early stop, when it
runs at all, and how its choice reaches the run's settings."""

import json

import pytest

from gan_accel.config import RunArguments, parse_config
from gan_accel.gan import precision
from gan_accel.gan.config import (
    GAN_CONFIG_TYPES,
    GANDataArguments,
    GANEvalArguments,
    GANModelArguments,
    GANTrainArguments,
)


@pytest.mark.parametrize(
    "fp32,bf16,chosen",
    [
        ([0.20, 0.21, 0.20], [0.11, 0.12, 0.11], "bf16"),  # AMX / AVX512-BF16: about 1.8x faster
        ([0.20, 0.21, 0.20], [1.40, 1.50, 1.45], "no"),  # AVX2 only: bf16 emulated, 7x slower
        ([0.20, 0.20, 0.20], [0.19, 0.19, 0.19], "no"),  # 1.05x: within the noise, fp32 stays
        ([0.20, 0.20, 0.20], [0.11, 5.00, 0.11], "bf16"),  # one preempted update does not decide
    ],
)
def test_the_faster_precision_is_kept(fp32, bf16, chosen):
    verdict = precision.choose(fp32, bf16)
    assert verdict.mixed_precision == chosen
    line = verdict.line()
    assert line.startswith(f"--mixed_precision {chosen}: measured on this CPU") and "\n" not in line
    assert f"bf16 {verdict.fp32_s / verdict.bf16_s:.2f}x the speed of fp32" in line


def fake_update(costs):
    """An update whose duration (on a fake clock) depends on the precision; records the order."""
    now = {"t": 0.0}
    order = []

    def update(use_bf16):
        order.append("bf16" if use_bf16 else "fp32")
        now["t"] += costs[use_bf16]

    return update, (lambda: now["t"]), order


def test_the_probe_alternates_after_a_warm_up_and_stops_early_when_bf16_is_no_contest():
    update, clock, order = fake_update({False: 0.2, True: 0.1})
    fp32, bf16 = precision.time_updates(update, count=3, clock=clock)
    assert order == ["fp32", "bf16"] * 4 and fp32 == pytest.approx([0.2] * 3) and bf16 == pytest.approx([0.1] * 3)
    update, clock, order = fake_update({False: 0.2, True: 1.5})  # an AVX2-only CPU
    fp32, bf16 = precision.time_updates(update, count=3, clock=clock)
    assert order == ["fp32", "bf16"] * 2 and precision.choose(fp32, bf16).mixed_precision == "no"


@pytest.mark.parametrize(
    "budget_s,device,processes,dry_run,probes",
    [
        (900.0, "cpu", 1, False, True),
        (None, "cpu", 1, False, False),  # --max_steps: no budget to choose for
        (60.0, "cpu", 1, False, False),  # too short to pay for the probe
        (900.0, "cuda", 1, False, False),
        (900.0, "cpu", 2, False, False),  # ranks timing apart could choose apart
        (900.0, "cpu", 1, True, False),
    ],
)
def test_when_the_probe_runs(budget_s, device, processes, dry_run, probes):
    assert precision.should_probe(budget_s, device, processes, dry_run) is probes


def configs(tmp_path, measure=None, budget="15m", **run):
    measure = {} if measure is None else {"measure_precision": measure}  # None: the default
    return (
        GANDataArguments(dataset="digits"),
        GANModelArguments(),
        GANTrainArguments(time_budget=budget, **measure),
        GANEvalArguments(),
        RunArguments(output_dir=str(tmp_path / "run"), cpu=True, **run),
    )


def test_the_choice_reaches_the_run_settings_and_a_flag_wins(tmp_path, capsys):
    calls = []

    def probe(train, model, data):
        calls.append(train.batch_size)
        return precision.choose([0.2], [0.1])

    chosen = precision.resolve(configs(tmp_path), set(), probe_fn=probe)
    assert chosen[-1].mixed_precision == "bf16" and calls == [64]
    assert capsys.readouterr().out.startswith("--mixed_precision bf16: measured on this CPU")
    given = precision.resolve(configs(tmp_path), {"mixed_precision"}, probe_fn=probe)
    assert given[-1].mixed_precision == "no" and calls == [64]  # the user's flag: no probe
    off = precision.resolve(configs(tmp_path, measure=False), set(), probe_fn=probe)
    assert off[-1].mixed_precision == "no" and calls == [64]  # turned off: fp32, no probe


@pytest.mark.parametrize(
    "flags,measures", [([], True), (["--measure_precision", "False"], False), (["--no_measure_precision"], False)]
)
def test_a_budgeted_run_measures_unless_told_not_to(tmp_path, flags, measures):
    argv = ["--output_dir", str(tmp_path / "run"), "--time_budget", "15m", *flags]
    parsed = parse_config((*GAN_CONFIG_TYPES, RunArguments), argv)
    train = next(c for c in parsed if isinstance(c, GANTrainArguments))
    assert train.measure_precision is measures


def test_a_resume_keeps_the_precision_of_its_checkpoint(tmp_path):
    checkpoint = tmp_path / "run" / "checkpoints" / "step_00000010"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"config": {"mixed_precision": "bf16"}}))

    def probe(*args):
        raise AssertionError("a resume does not measure again")

    resumed = precision.resolve(configs(tmp_path, resume_from_checkpoint="latest"), set(), probe_fn=probe)
    assert resumed[-1].mixed_precision == "bf16"
    assert precision.saved_precision(str(tmp_path / "none"), "latest") == (None, False)


def write_checkpoint(tmp_path, step, config):
    checkpoint = tmp_path / "run" / "checkpoints" / f"step_{step:08d}"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"config": config}))
    return checkpoint


def test_a_resume_without_the_budget_keeps_the_precision_the_probe_chose(tmp_path):
    # The resume is refused for the missing --time_budget; its message must not list a
    # --mixed_precision change the user never made (the probe chose bf16, not them).
    write_checkpoint(tmp_path, 10, {"mixed_precision": "bf16", "time_budget": "15m"})
    resumed = precision.resolve(configs(tmp_path, budget=None, resume_from_checkpoint="latest"), set())
    assert resumed[-1].mixed_precision == "bf16"
    # A run without a budget on either side is the user's precision: compared, not adopted.
    other = tmp_path / "other"
    write_checkpoint(other, 10, {"mixed_precision": "bf16", "time_budget": None})
    kept = precision.resolve(configs(other, budget=None, resume_from_checkpoint="latest"), set())
    assert kept[-1].mixed_precision == "no"


def test_a_resume_from_a_path_that_is_no_checkpoint_is_refused_before_the_probe(tmp_path):
    from gan_accel.errors import UserError

    def probe(*args):
        raise AssertionError("probed before the checkpoint path was checked")

    root = tmp_path / "run" / "checkpoints"
    with pytest.raises(
        UserError, match=rf"no such folder; pass 'latest' or a checkpoint folder named {root}/step_NNNNNNNN"
    ):
        precision.resolve(configs(tmp_path, resume_from_checkpoint=str(root / "step_00000500")), set(), probe_fn=probe)
    real = write_checkpoint(tmp_path, 40, {"mixed_precision": "no"})
    with pytest.raises(UserError, match=rf"no such folder; pass 'latest' or a checkpoint folder such as {real}$"):
        precision.resolve(configs(tmp_path, resume_from_checkpoint=str(root / "step_00000500")), set(), probe_fn=probe)
    afile = tmp_path / "model.safetensors"
    afile.write_bytes(b"")
    with pytest.raises(UserError, match=rf"{afile}: is a file, not a checkpoint folder; pass 'latest' or"):
        precision.resolve(configs(tmp_path, resume_from_checkpoint=str(afile)), set(), probe_fn=probe)
