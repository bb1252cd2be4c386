"""End to end: train_gan.py writes every file it promises; sample_gan.py reads the export;
schedules end where they should; resume reproduces the uninterrupted run."""

import json
import re

import pytest
import torch
from PIL import Image
from safetensors.torch import load_file

from gan_accel.config import RunArguments
from gan_accel.gan.config import GANDataArguments, GANModelArguments, GANTrainArguments
from gan_accel.gan.trainer import GANTrainer
from helpers import GRADIENT_LEAK, TINY_GAN, kept_evaluation, load_script, read_jsonl

train_gan = load_script("train_gan").main
sample_gan = load_script("sample_gan").main

CKPT_FILES = {
    "model.safetensors",
    "model_1.safetensors",
    "optimizer.bin",
    "optimizer_1.bin",
    "scheduler.bin",
    "scheduler_1.bin",
    "random_states_0.pkl",
    "ema.safetensors",
    "recipe.json",
    "trainer_state.json",
    "data_fingerprint.json",
    "exported.json",  # the final checkpoint's: what its export wrote
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("gan") / "run"
    assert (
        train_gan(
            [
                *TINY_GAN,
                "--output_dir",
                str(out),
                "--max_steps",
                "12",
                "--sample_every",
                "6",
                "--checkpointing_steps",
                "4",
                "--checkpoints_total_limit",
                "2",
            ]
        )
        == 0
    )
    return out


def test_train_writes_every_file(run_dir):
    config = json.loads((run_dir / "config.json").read_text())
    assert config["max_steps"] == 12 and config["g_channels"] == 8 and config["loss"] == "nonsaturating"

    records = read_jsonl(run_dir / "metrics.jsonl")
    assert [r["step"] for r in records] == [2, 4, 6, 8, 10, 12]
    for key in ("loss/D", "loss/G", "lr/G", "lr/D", "throughput/img_per_s", "D/real_logit"):
        assert all(isinstance(r[key], float) for r in records), key

    grids = sorted(p.name for p in (run_dir / "samples").iterdir())
    assert grids == ["step_000006.png", "step_000012.png", "training.gif"]
    with Image.open(run_dir / "samples" / "step_000012.png") as img:
        # 16 images of 16 px + 2 px padding, as square as possible: 4 rows x 4 columns.
        assert img.size == (4 * 18 + 2, 4 * 18 + 2)
    with Image.open(run_dir / "samples" / "training.gif") as gif:  # the grids, in step order, as frames
        assert gif.n_frames == 2 and gif.size == (4 * 18 + 2, 4 * 18 + 2)

    ckpts = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert ckpts == ["step_00000008", "step_00000012"]  # total_limit 2 kept the newest two
    final = run_dir / "checkpoints" / "step_00000012"
    assert {p.name for p in final.iterdir()} == CKPT_FILES
    state = json.loads((final / "trainer_state.json").read_text())
    assert state["state"]["step"] == 12 and state["state"]["micro_step"] == 12
    assert state["config"] == config

    gen = run_dir / "generator"
    assert {"config.json", "model.safetensors"} <= {p.name for p in gen.iterdir()}
    assert json.loads((gen / "config.json").read_text())["arch"] == "dcgan"
    # The export is the EMA generator's weights (BN statistics recalibrated, weights identical).
    ema = load_file(str(final / "ema.safetensors"))
    exported = load_file(str(gen / "model.safetensors"))
    weights = [k for k in ema if "running" not in k and "num_batches" not in k]
    assert weights and all(torch.equal(ema[k], exported[k]) for k in weights)


def test_sample_gan_reads_the_export(run_dir, tmp_path):
    out = tmp_path / "samples"
    assert (
        sample_gan(
            [
                "--generator",
                str(run_dir / "generator"),
                "--num_images",
                "10",
                "--output_dir",
                str(out),
                "--batch_size",
                "4",
                "--grid",
                str(tmp_path / "grid.png"),
                "--seed",
                "3",
            ]
        )
        == 0
    )
    files = sorted(out.glob("*.png"))
    assert [p.name for p in files] == [f"{i:06d}.png" for i in range(10)]
    assert (out / "seeds.json").is_file()
    with Image.open(files[0]) as img:
        assert img.size == (16, 16)
    assert (tmp_path / "grid.png").is_file()
    # Same seed, same images.
    again = tmp_path / "again"
    sample_gan(
        ["--generator", str(run_dir / "generator"), "--num_images", "2", "--output_dir", str(again), "--seed", "3"]
    )
    assert (again / "000000.png").read_bytes() == (out / "000000.png").read_bytes()


def test_output_dir_with_a_run_is_refused(run_dir, capsys):
    before = sorted(p.name for p in run_dir.rglob("*"))
    with pytest.raises(SystemExit) as exit_info:
        train_gan([*TINY_GAN, "--output_dir", str(run_dir), "--max_steps", "2"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--output_dir" in err[0] and "--overwrite_output_dir" in err[0]
    assert sorted(p.name for p in run_dir.rglob("*")) == before


def test_dry_run_prints_config_and_writes_nothing(tmp_path, capsys):
    assert train_gan([*TINY_GAN, "--output_dir", str(tmp_path / "x"), "--dry_run"]) == 0
    assert '"z_dim": 8' in capsys.readouterr().out
    assert not (tmp_path / "x").exists()


def trainer(out, max_steps, **overrides):
    data = GANDataArguments(image_size=16)
    model = GANModelArguments(z_dim=8, g_channels=8, d_channels=8, d_norm=overrides.pop("d_norm", "batch"))
    train_keys = {f for f in GANTrainArguments.__dataclass_fields__}
    train = GANTrainArguments(
        max_steps=max_steps,
        batch_size=overrides.pop("batch_size", 32),
        sample_every=0,
        **{k: overrides.pop(k) for k in list(overrides) if k in train_keys},
    )
    run = RunArguments(output_dir=str(out), log_every=1, checkpointing_steps=0, **overrides)
    return GANTrainer(data, model, train, run)


@pytest.mark.parametrize("schedule,accum,n_critic", [("linear", 1, 1), ("linear", 2, 1), ("cosine", 2, 2)])
def test_lr_schedule_ends_at_the_last_update(tmp_path, capsys, schedule, accum, n_critic):
    t = trainer(
        tmp_path / "run",
        6,
        lr_scheduler=schedule,
        warmup_steps=2,
        gradient_accumulation_steps=accum,
        d_steps_per_g_step=n_critic,
    )
    t.train()
    records = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [r["step"] for r in records] == list(range(1, 7))
    assert records[0]["lr/G"] == pytest.approx(1e-4)  # warm-up: 1/2 of 2e-4 after update 1
    assert records[-1]["lr/G"] == 0.0 and records[-1]["lr/D"] == 0.0
    assert t.engine.schedulers["G"].scheduler.last_epoch == 6
    assert t.engine.schedulers["D"].scheduler.last_epoch == 6 * n_critic
    assert t.run.state.micro_step == 6 * accum * n_critic
    assert GRADIENT_LEAK not in capsys.readouterr().out  # G's phase freezes D, D's reads detached fakes


def tensors_of(ckpt):
    out = {f"G.{k}": v for k, v in load_file(str(ckpt / "model.safetensors")).items()}
    out.update({f"D.{k}": v for k, v in load_file(str(ckpt / "model_1.safetensors")).items()})
    out.update({f"EMA.{k}": v for k, v in load_file(str(ckpt / "ema.safetensors")).items()})
    if (ckpt / "ada.safetensors").is_file():
        out.update({f"ADA.{k}": v for k, v in load_file(str(ckpt / "ada.safetensors")).items()})
    for name in ("optimizer.bin", "optimizer_1.bin"):
        opt = torch.load(ckpt / name, weights_only=True)
        for idx, st in opt["state"].items():
            for k, v in st.items():
                out[f"{name}.{idx}.{k}"] = v
    return out


AUGMENT_R1 = dict(diffaugment="translation,cutout,color", r1_gamma=1.0, r1_interval=3)


@pytest.mark.parametrize(
    "k,accum,extra",
    [
        (5, 1, {}),
        (5, 2, {}),
        # DiffAugment draws and the lazy R1 phase must resume too.
        (5, 2, AUGMENT_R1),
        # n_critic 2: resumed in epoch 1 (20 batches in), ends in epoch 2.
        (5, 2, dict(d_steps_per_g_step=2, **AUGMENT_R1)),
        # resumed exactly at the end of epoch 0 (14 batches).
        (7, 2, {}),
        # ADA: p and its running sums resume (p is adjusted at step 4, 6, 8: across the split at 5)
        # on top of DiffAugment.
        (5, 1, dict(ada=True, ada_interval=2, ada_kimg=2.0, ada_target=0.1, diffaugment="translation")),
    ],
)
def test_resume_equals_uninterrupted_run(tmp_path, k, accum, extra):
    # 128 x 1797 digits: 14 batches per epoch, so k=5 (x accum) stops mid-epoch and 2k crosses an epoch.
    # A constant LR: stopping by --max_steps k under a decaying schedule would change the schedule itself.
    kw = dict(
        batch_size=128,
        gradient_accumulation_steps=accum,
        lr_scheduler="constant",
        warmup_steps=2,
        ema_decay=0.9,
        **extra,
    )
    trainer(tmp_path / "straight", 2 * k, **kw).train()
    trainer(tmp_path / "split", k, **kw).train()
    resumed = trainer(tmp_path / "split", 2 * k, resume_from_checkpoint="latest", **kw)
    assert resumed.run.state.step == k
    resumed.train()
    last = f"step_{2 * k:08d}"
    a = tensors_of(tmp_path / "straight" / "checkpoints" / last)
    b = tensors_of(tmp_path / "split" / "checkpoints" / last)
    assert a.keys() == b.keys() and len(a) > 20
    assert all(torch.equal(a[key], b[key]) for key in a), [key for key in a if not torch.equal(a[key], b[key])][:5]
    sa = json.loads((tmp_path / "straight" / "checkpoints" / last / "trainer_state.json").read_text())["state"]
    sb = json.loads((tmp_path / "split" / "checkpoints" / last / "trainer_state.json").read_text())["state"]
    batches = 2 * k * accum * extra.get("d_steps_per_g_step", 1)
    assert sa == sb and sa["step"] == 2 * k and sa["epoch"] == batches // 14
    if extra.get("ada"):
        assert 0 < a["ADA.p"].item() < 1  # p moved, so its resume is tested


def test_evaluation_during_training_keeps_the_best_generator(tmp_path):
    out = tmp_path / "run"
    assert (
        train_gan(
            [*TINY_GAN, "--output_dir", str(out), "--max_steps", "6", "--eval_every", "3", "--eval_num_images", "100"]
        )
        == 0
    )
    evals = [r for r in read_jsonl(out / "metrics.jsonl") if "eval/fid" in r]
    assert [r["step"] for r in evals] == [3, 6]
    for r in evals:
        assert r["eval/fid"] > r["eval/fid_floor"] >= 0 and 0 < r["eval/classes_covered"] <= 10
        assert r["eval/classifier_accuracy"] >= 0.9
        # Fidelity/diversity, intervals and the protocol id reach metrics.jsonl through the trainer as it is.
        assert all(0 <= r[f"eval/{m}"] for m in ("precision", "recall", "density", "coverage"))
        assert r["eval/fid_ci_low"] <= r["eval/fid"] <= r["eval/fid_ci_high"]
        assert (out / "cache" / "protocol" / f"{int(r['eval/protocol_id']):012x}.json").is_file()
    best = min(evals, key=lambda r: r["eval/fid"])
    assert evals[-1]["eval/best_fid"] == best["eval/fid"]
    assert (out / "best_generator" / "model.safetensors").is_file()
    # The export is the last evaluation that improved on the lowest FID so far or whose interval
    # reached it (a tie: the later generator trained longer).
    kept = kept_evaluation(evals)
    score = json.loads((out / "best_generator" / "score.json").read_text())
    assert (score["step"], score["value"]) == (kept["step"], kept["eval/fid"])
    # Its model card carries the scores with the protocol they were measured with.
    card = (out / "best_generator" / "README.md").read_text()
    assert "Protocol (how each number was measured)" in card and '"feature_extractor": "domain"' in card
    assert "| precision |" in card and "| recall |" in card
    state = json.loads((out / "checkpoints" / "step_00000006" / "trainer_state.json").read_text())["state"]
    assert state["best_metric"] == best["eval/fid"]
    assert (out / "cache").is_dir()  # classifier and reference statistics cached in the run folder


def test_tensorboard_tracker_writes_events(tmp_path):
    out = tmp_path / "run"
    assert train_gan([*TINY_GAN, "--output_dir", str(out), "--max_steps", "2", "--report_to", "tensorboard"]) == 0
    events = list((out / "logs").rglob("events.out.tfevents.*"))
    assert events and events[0].stat().st_size > 0
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    assert {"loss/D", "loss/G", "lr/G"} <= set(acc.Tags()["scalars"])


def without_sample_count(flags):
    i = flags.index("--num_sample_images")
    return flags[:i] + flags[i + 2 :]


def test_conditional_grids_with_the_default_sample_count(tmp_path):
    # 64 images (the default) and 10 classes: rows of 7, classes 0-3 get 7 images, 4-9 get 6.
    out = tmp_path / "run"
    assert (
        train_gan(
            [
                *without_sample_count(TINY_GAN),
                "--conditional",
                "--max_steps",
                "2",
                "--sample_every",
                "1",
                "--output_dir",
                str(out),
            ]
        )
        == 0
    )
    assert sorted(p.name for p in (out / "samples").iterdir()) == [
        "step_000001.png",
        "step_000002.png",
        "training.gif",
    ]
    with Image.open(out / "samples" / "step_000002.png") as img:
        assert img.size == (7 * 18 + 2, 10 * 18 + 2)  # 7 columns, a row per class
    assert (out / "generator" / "model.safetensors").is_file()


def test_grid_labels_any_count():
    from gan_accel.sampling import class_rows, grid_labels

    labels = grid_labels(64, 10)
    assert labels.tolist() == sorted(labels.tolist()) and len(labels) == 64
    assert torch.bincount(labels).tolist() == [7] * 4 + [6] * 6
    images, ncol = class_rows(torch.zeros(64, 1, 2, 2), labels, 10)
    assert ncol == 7 and images.shape[0] == 70 and (images == -1).all(dim=(1, 2, 3)).sum() == 6
    assert torch.equal(grid_labels(100, 10), torch.arange(10).repeat_interleave(10))
    assert grid_labels(4, 10).tolist() == [0, 1, 2, 3] and grid_labels(5, 0) is None


def test_a_failing_grid_never_costs_the_final_checkpoint_or_export(tmp_path, monkeypatch):
    import gan_accel.gan.trainer as trainer_module

    def broken_grid(*args, **kwargs):
        raise OSError("grid writer failed")

    monkeypatch.setattr(trainer_module, "save_grid", broken_grid)
    t = trainer(tmp_path / "run", 2)
    with pytest.raises(OSError, match="grid writer failed"):
        t.train()
    assert (tmp_path / "run" / "checkpoints" / "step_00000002" / "trainer_state.json").is_file()
    assert (tmp_path / "run" / "generator" / "model.safetensors").is_file()


def test_never_exports_a_nonfinite_generator(tmp_path):
    from gan_accel.errors import UserError
    from gan_accel.models import build_models, save_generator

    G, _ = build_models("dcgan", z_dim=8, channels=1, image_size=16, g_channels=8, d_channels=8, d_norm="none")
    G.net[1].running_var.fill_(float("inf"))  # a BatchNorm statistic, not a weight
    with pytest.raises(UserError, match="not exporting .*not finite"):
        save_generator(G, tmp_path / "generator")
    assert not (tmp_path / "generator").exists()


def test_a_nonfinite_fid_never_becomes_the_best(tmp_path):
    t = trainer(tmp_path / "run", 1)
    t.train()

    class DivergedResult:  # what the evaluator returns for a generator making NaN images
        def flat(self):
            return {"eval/fid": float("nan"), "eval/fid_floor": 0.5, "eval/kid_mean": float("nan")}

    class DivergedEvaluator:
        def evaluate_full(self, G):
            return DivergedResult()

    t.evaluator = DivergedEvaluator()
    t.evaluate()
    assert t.run.state.best_metric != t.run.state.best_metric  # still "no best yet"
    assert not (tmp_path / "run" / "best_generator").exists()
    assert json.loads((tmp_path / "run" / "eval_results.json").read_text())["eval/fid"] is None  # JSON, NaN as null


def test_domain_classifier_training_shows_a_bar(capsys):
    # Its one-off training takes about a minute on CPU (evaluate_gan.py, --eval_every): a bar says
    # it is working rather than hung.
    from gan_accel.metrics.domain import DomainTrainSettings, train_domain_classifier

    images = torch.randint(0, 256, (64, 1, 16, 16), dtype=torch.uint8)
    train_domain_classifier(
        images, torch.arange(64) % 2, 2, DomainTrainSettings(epochs=2, batch_size=32, width=4), torch.device("cpu")
    )
    err = capsys.readouterr().err
    # The bar's last refresh may fall inside tqdm's minimum interval: any count of the 4 steps shows it.
    assert "domain classifier" in err and re.search(r"\d/4", err)
