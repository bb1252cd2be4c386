"""End to end: train_cyclegan.py writes every output it promises, translate.py reads the export,
resume reproduces the uninterrupted run (image pools included), the G phase leaves both
discriminators untouched."""

import json

import pytest
import torch
from PIL import Image

from cyclegan_fixtures import TINY_CYCLEGAN, checkpoint_tensors, make_domains
from gan_accel.config import RunArguments
from gan_accel.cyclegan.config import (
    CycleGANDataArguments,
    CycleGANEvalArguments,
    CycleGANModelArguments,
    CycleGANTrainArguments,
)
from gan_accel.cyclegan.trainer import CycleGANTrainer
from helpers import GRADIENT_LEAK, load_script, read_jsonl

train_cyclegan = load_script("train_cyclegan").main
translate = load_script("translate").main

CKPT_FILES = {
    "model.safetensors",
    "model_1.safetensors",
    "model_2.safetensors",
    "model_3.safetensors",
    "optimizer.bin",
    "optimizer_1.bin",
    "optimizer_2.bin",
    "scheduler.bin",
    "scheduler_1.bin",
    "scheduler_2.bin",
    "random_states_0.pkl",
    "pool_A.safetensors",
    "pool_B.safetensors",
    "recipe.json",
    "trainer_state.json",
    "data_fingerprint.json",
    "exported.json",  # the final checkpoint's: what its export wrote
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return make_domains(tmp_path_factory.mktemp("cyclegan") / "data")


@pytest.fixture(scope="module")
def run_dir(data_dir):
    out = data_dir.parent / "run"
    assert (
        train_cyclegan(
            [
                *TINY_CYCLEGAN,
                "--dataset",
                "folder",
                "--data_dir",
                str(data_dir),
                "--output_dir",
                str(out),
                "--max_steps",
                "4",
                "--sample_every",
                "2",
                "--checkpointing_steps",
                "2",
                "--n_epochs",
                "1",
                "--n_epochs_decay",
                "1",
            ]
        )
        == 0
    )
    return out


def test_train_writes_every_output(run_dir):
    config = json.loads((run_dir / "config.json").read_text())
    assert config["n_blocks"] == 1 and config["lambda_cycle"] == 10.0 and config["loss"] == "lsgan"

    records = read_jsonl(run_dir / "metrics.jsonl")
    assert [r["step"] for r in records] == [1, 2, 3, 4]
    for key in (
        "loss/G_AB",
        "loss/G_BA",
        "loss/D_A",
        "loss/D_B",
        "loss/cycle_A",
        "loss/cycle_B",
        "loss/idt_A",
        "loss/idt_B",
        "loss/G",
        "lr/G",
        "lr/D_A",
        "lr/D_B",
    ):
        assert all(isinstance(r[key], float) for r in records), key
    # 2 updates an epoch: constant for epoch 0, then linear to 0 over epoch 1 (the reference schedule).
    assert [r["lr/G"] for r in records] == pytest.approx([2e-4, 2e-4, 1e-4, 0.0])
    assert records[-1]["lr/D_A"] == records[-1]["lr/D_B"] == 0.0

    assert sorted(p.name for p in (run_dir / "samples").iterdir()) == ["step_000002.png", "step_000004.png"]
    with Image.open(run_dir / "samples" / "step_000004.png") as img:
        # 3 rows of real_A | fake_B | rec_A | real_B | fake_A | rec_B, 16 px + 2 px padding.
        assert img.size == (6 * 18 + 2, 3 * 18 + 2)

    final = run_dir / "checkpoints" / "step_00000004"
    assert {p.name for p in final.iterdir()} == CKPT_FILES
    recipe = json.loads((final / "recipe.json").read_text())
    assert recipe["checkpoint_model_order"] == ["G_AB", "G_BA", "D_A", "D_B"]
    pool = checkpoint_tensors(final)
    assert int(pool["pool_A.num_images"]) == 3 and pool["pool_A.images"].shape == (3, 1, 16, 16)

    for direction in ("A2B", "B2A"):
        export = run_dir / f"generator_{direction}"
        assert {"config.json", "model.safetensors"} <= {p.name for p in export.iterdir()}
        cfg = json.loads((export / "config.json").read_text())
        assert cfg["direction"] == direction and cfg["image_size"] == 16 and cfg["n_blocks"] == 1


def test_translate_writes_the_same_file_names(run_dir, data_dir, tmp_path):
    out = tmp_path / "translated"
    assert (
        translate(
            [
                "--generator",
                str(run_dir / "generator_A2B"),
                "--input_dir",
                str(data_dir / "trainA"),
                "--output_dir",
                str(out),
            ]
        )
        == 0
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in (data_dir / "trainA").iterdir())
    with Image.open(out / "000.png") as img:
        assert img.size == (16, 16)


def test_exported_generator_is_the_trained_one(run_dir):
    from gan_accel.cyclegan.export import load_translator

    G, _ = load_translator(run_dir / "generator_B2A")
    trained = checkpoint_tensors(run_dir / "checkpoints" / "step_00000004")
    assert all(torch.equal(v, trained[f"G_BA.{k}"]) for k, v in G.state_dict().items())


@pytest.mark.parametrize("accum", [1, 2])
def test_resume_equals_uninterrupted_run(tmp_path, data_dir, accum):
    # 2 updates an epoch (1 with accumulation 2): the split at update 3 is past the first epoch.
    common = [
        *TINY_CYCLEGAN,
        "--dataset",
        "folder",
        "--data_dir",
        str(data_dir),
        "--checkpointing_steps",
        "3",
        "--gradient_accumulation_steps",
        str(accum),
        "--n_epochs",
        "2",
        "--n_epochs_decay",
        "2",
    ]
    straight, split = tmp_path / "straight", tmp_path / "split"
    assert train_cyclegan([*common, "--output_dir", str(straight), "--max_steps", "6"]) == 0
    assert train_cyclegan([*common, "--output_dir", str(split), "--max_steps", "3"]) == 0
    assert (
        train_cyclegan([*common, "--output_dir", str(split), "--max_steps", "6", "--resume_from_checkpoint", "latest"])
        == 0
    )
    a = checkpoint_tensors(straight / "checkpoints" / "step_00000006")
    b = checkpoint_tensors(split / "checkpoints" / "step_00000006")
    assert a.keys() == b.keys() and int(a["pool_B.num_images"]) == 3
    different = [k for k in a if not torch.equal(a[k], b[k])]
    assert not different, different[:5]
    state = json.loads((split / "checkpoints" / "step_00000006" / "trainer_state.json").read_text())["state"]
    assert state["epoch"] >= 2


def test_generator_phase_leaves_the_discriminators_untouched(tmp_path, data_dir, capsys):
    """With accumulation, D's gradients from the previous micro-batch are still there when the G
    phase runs: the G loss, which goes through D_A and D_B, must neither change their weights nor
    add to those gradients."""
    args = (
        CycleGANDataArguments(dataset="folder", data_dir=str(data_dir), image_size=16, load_size=18),
        CycleGANModelArguments(g_channels=8, n_blocks=1, d_channels=8, d_layers=2),
        CycleGANTrainArguments(batch_size=4, max_steps=3, sample_every=0, pool_size=3),
        RunArguments(output_dir=str(tmp_path / "run"), gradient_accumulation_steps=2, checkpointing_steps=0),
        CycleGANEvalArguments(evaluate=False),
    )
    trainer = CycleGANTrainer(*args)
    g_phase, d_phase = trainer.engine.recipe.phases
    assert g_phase.name == "G" and d_phase.name == "D"
    D = [trainer.engine.nets[n] for n in ("D_A", "D_B")]
    seen = []

    def snapshot():
        return [[(p.detach().clone(), None if p.grad is None else p.grad.clone()) for p in d.parameters()] for d in D]

    def g_loss(s, original=g_phase.loss):
        seen.append(snapshot())
        return original(s)

    def d_loss(s, original=d_phase.loss):
        before = seen[-1]
        for d, saved in zip(D, before):
            for p, (weight, grad) in zip(d.parameters(), saved):
                assert torch.equal(p, weight)
                assert (p.grad is None and grad is None) or torch.equal(p.grad, grad)
        seen.append("checked")
        return original(s)

    g_phase.loss, d_phase.loss = g_loss, d_loss
    trainer.train()
    assert seen.count("checked") == 6  # 3 updates x 2 micro-batches
    # ...and on accumulation micro-steps there were D gradients for the check to compare.
    assert any(grad is not None for entry in seen if entry != "checked" for _, grad in entry[0])
    assert GRADIENT_LEAK not in capsys.readouterr().out


@pytest.mark.parametrize("script", ["train_cyclegan", "translate"])
def test_help(script, capsys):
    with pytest.raises(SystemExit) as info:
        load_script(script).main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "--output_dir" in out and ("--lambda_identity" in out or "--input_dir" in out)


@pytest.mark.parametrize("scheduler", ["linear", "cosine"])
def test_toolkit_schedulers_warm_up_and_end_at_zero(tmp_path, data_dir, scheduler):
    out = tmp_path / "run"
    assert (
        train_cyclegan(
            [
                *TINY_CYCLEGAN,
                "--dataset",
                "folder",
                "--data_dir",
                str(data_dir),
                "--output_dir",
                str(out),
                "--max_steps",
                "3",
                "--lr_scheduler",
                scheduler,
                "--warmup_steps",
                "1",
                "--checkpointing_steps",
                "0",
            ]
        )
        == 0
    )
    lrs = [r["lr/G"] for r in read_jsonl(out / "metrics.jsonl")]
    assert (
        lrs[0] == pytest.approx(2e-4) and 0 < lrs[1] < 2e-4 and lrs[2] == 0.0
    )  # after warm-up: decay over --max_steps


def test_dry_run_prints_the_config_and_writes_nothing(tmp_path, capsys):
    assert (
        train_cyclegan([*TINY_CYCLEGAN, "--output_dir", str(tmp_path / "run"), "--dry_run", "--lambda_cycle", "5"])
        == 0
    )
    assert '"lambda_cycle": 5.0' in capsys.readouterr().out and not (tmp_path / "run").exists()
