"""Bad input on the GAN path, as a table: train_gan.py, sample_gan.py and evaluate_gan.py each
answer with exit code 2 and ONE line ``error: ...`` (no traceback) naming the flag or file, and
leave every file already on disk as it was (same names, contents and modification times)."""

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from gan_accel.data import load_image_data
from gan_accel.errors import UserError
from gan_accel.models import build_models, save_generator
from helpers import TINY_GAN, load_script, one_line_error, write_png

SCRIPTS = {name: load_script(name).main for name in ("train_gan", "sample_gan", "evaluate_gan")}


def snapshot(*roots):
    """Every path under the roots: its kind, modification time and content hash."""
    out = {}
    for root in roots:
        for p in [root, *sorted(Path(root).rglob("*"))]:
            st = p.stat()
            out[str(p)] = ("dir", None) if p.is_dir() else (st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Folders the sample/evaluate cases point at: a 16 px grey generator export, a training
    run folder (config.json, checkpoints/, generator/), a classifier (DistilBERT) export."""
    root = tmp_path_factory.mktemp("exports")
    G, _ = build_models("dcgan", z_dim=8, channels=1, image_size=16, g_channels=8, d_channels=8, d_norm="none")
    save_generator(G, root / "run" / "generator")
    (root / "run" / "checkpoints").mkdir()
    (root / "run" / "config.json").write_text(json.dumps({"z_dim": 8, "channels": 1, "image_size": 16}))
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    bert = DistilBertForSequenceClassification(
        DistilBertConfig(vocab_size=30, dim=8, n_layers=1, n_heads=2, hidden_dim=16)
    )
    bert.save_pretrained(root / "classifier")
    only_config = root / "config_only"
    only_config.mkdir()
    (only_config / "config.json").write_bytes((root / "run" / "generator" / "config.json").read_bytes())
    truncated = root / "truncated"
    truncated.mkdir()
    (truncated / "config.json").write_bytes((root / "run" / "generator" / "config.json").read_bytes())
    weights = (root / "run" / "generator" / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    with torch.no_grad():
        G.net[0].weight[0, 0, 0, 0] = float("nan")  # what a diverged run writes (save_generator refuses it)
    non_finite = root / "non_finite"
    G.save_pretrained(str(non_finite), config=json.loads((only_config / "config.json").read_text()))
    return root


def corrupt_folder(tmp):
    for i in range(3):
        (tmp / "bad" / f"{i}.jpg").parent.mkdir(parents=True, exist_ok=True)
        (tmp / "bad" / f"{i}.jpg").write_bytes(b"not a jpeg")
    return ["--data_dir", str(tmp / "bad")]


def flat_folder(tmp):
    write_png(tmp / "flat" / "a.png", np.zeros((16, 16), dtype=np.uint8), mode="L")
    return ["--data_dir", str(tmp / "flat")]


def classes_and_a_stray(tmp):
    for name in ("cats", "dogs"):
        write_png(tmp / "classes" / name / "a.png", np.zeros((16, 16), dtype=np.uint8), mode="L")
    write_png(tmp / "classes" / "stray.png", np.zeros((16, 16), dtype=np.uint8), mode="L")
    return ["--data_dir", str(tmp / "classes")]


def config_file(text):
    def make(tmp):
        (tmp / "c.yaml").write_text(text)
        return ["--config", str(tmp / "c.yaml")]

    return make


def empty_folder(tmp):
    (tmp / "empty").mkdir()
    (tmp / "empty" / "notes.txt").write_text("no images here")
    return ["--data_dir", str(tmp / "empty")]


def a_file(tmp):
    (tmp / "file.png").write_bytes(b"x")
    return ["--data_dir", str(tmp / "file.png")]


# (flags or a function of the test's folder returning flags, what the line must contain)
TRAIN_CASES = {
    "lr_g zero": (["--lr_g", "0"], "--lr_g must be > 0"),
    "lr_d negative": (["--lr_d", "-0.1"], "--lr_d must be > 0"),
    "lr_d nan": (["--lr_d", "nan"], "--lr_d must be a finite number; got nan"),
    "lr_g inf": (["--lr_g", "inf"], "--lr_g must be a finite number; got inf"),
    "r1_gamma nan": (["--r1_gamma", "nan"], "--r1_gamma must be a finite number"),
    "yaml lr_g .nan": (config_file("lr_g: .nan\n"), "c.yaml: --lr_g must be a finite number; got nan"),
    "yaml bad choice": (config_file("loss: wasserstein\n"), "--loss must be one of"),
    "yaml malformed": (config_file("max_steps: [1, 2\nloss: hinge\n"), "YAML/JSON"),
    "seed negative": (["--seed", "-1"], "--seed must be in [0, 4294967295]; got -1"),
    "seed past 32 bits": (["--seed", "4294967296"], "--seed must be in [0, 4294967295]"),
    "batch_size zero": (["--batch_size", "0"], "--batch_size must be > 0"),
    "max_steps zero": (["--max_steps", "0"], "--max_steps must be > 0"),
    "image_size": (["--image_size", "48"], "--image_size 48 is not supported by --arch dcgan"),
    "loss choice": (["--loss", "wasserstein"], "argument --loss: invalid choice: 'wasserstein'"),
    "arch choice": (["--arch", "stylegan9"], "argument --arch: invalid choice"),
    "dataset choice": (["--dataset", "imagenet"], "argument --dataset: invalid choice"),
    "channels": (["--channels", "2"], "--channels must be 1 or 3"),
    "warmup": (
        ["--warmup_steps", "50", "--max_steps", "10"],
        "--warmup_steps (50) must be smaller than --max_steps (10)",
    ),
    "beta1": (["--adam_beta1", "1.5"], "--adam_beta1 must be in [0, 1)"),
    "mixed precision": (["--mixed_precision", "fp8"], "--mixed_precision/--mixed-precision: invalid choice: 'fp8'"),
    "batch over dataset": (
        ["--batch_size", "4096"],
        "--batch_size 4096 x 1 processes is larger than the dataset (1797 images)",
    ),
    "unknown flag": (["--no_such_flag", "1"], "unknown flag --no_such_flag; run with --help"),
    "typo'd flag": (["--max_stps", "5"], "unknown flag --max_stps (did you mean --max_steps?)"),
    "config is a folder": (lambda tmp: ["--config", str(tmp)], "is a folder; pass a YAML or JSON file"),
    "data_dir missing": (lambda tmp: ["--dataset", "folder", "--data_dir", str(tmp / "nope")], "nope: does not exist"),
    "data_dir is a file": (lambda tmp: ["--dataset", "folder", *a_file(tmp)], "file.png: not a folder"),
    "data_dir empty": (lambda tmp: ["--dataset", "folder", *empty_folder(tmp)], "no images"),
    "data_dir unset": (["--dataset", "folder"], "--dataset folder needs --data_dir"),
    "only corrupt images": (
        lambda tmp: ["--dataset", "folder", *corrupt_folder(tmp)],
        "none of the 3 image files could be read",
    ),
    "conditional unlabelled": (
        lambda tmp: ["--dataset", "folder", *flat_folder(tmp), "--conditional"],
        "--conditional needs labelled data",
    ),
    "evaluations unlabelled": (
        lambda tmp: ["--dataset", "folder", *flat_folder(tmp), "--num_evaluations", "3"],
        "--num_evaluations with --eval_feature_extractor domain needs at least 2 classes (for a folder: one "
        "sub-folder per class); folder:",
    ),
    "max_steps and time_budget": (
        ["--max_steps", "5", "--time_budget", "20s"],
        "--max_steps 5 and --time_budget 20s both set the run's length",
    ),
    "conditional with a stray image": (
        lambda tmp: ["--dataset", "folder", *classes_and_a_stray(tmp), "--conditional"],
        "has class sub-folders (cats, dogs) but also 1 image(s) at its top level",
    ),
    "stray image named": (
        lambda tmp: ["--dataset", "folder", *classes_and_a_stray(tmp), "--conditional"],
        "classes/stray.png), so it is read unlabelled; move them into a class sub-folder",
    ),
    "report_to unknown": (["--report_to", "mlfow"], "--report_to mlfow: unknown tracker mlfow"),
    "report_to all,none": (["--report_to", "all,none"], "--report_to all,none: all and none cannot be combined"),
    "push_to_hub without repo": (["--push_to_hub"], "--push_to_hub needs --hub_model_id USER/NAME"),
    "overwrite and resume": (
        ["--overwrite_output_dir", "--resume_from_checkpoint", "latest"],
        "--overwrite_output_dir with --resume_from_checkpoint latest: one deletes the run in --output_dir, "
        "the other continues it; pass only one of them",
    ),
    "mnist missing": (lambda tmp: ["--dataset", "mnist", "--data_dir", str(tmp / "mnist")], "--download"),
    "time_budget": (["--time_budget", "soon"], "--time_budget 'soon' is not a duration; write e.g. 90s, 15m"),
    "time_budget zero": (["--time_budget", "0m"], "--time_budget '0m': the duration must be positive"),
    "preset choice": (["--preset", "fast"], "argument --preset: invalid choice: 'fast'"),
    "ada_kimg zero": (["--ada_kimg", "0"], "--ada_kimg must be > 0"),
    "ada_target": (["--ada_target", "1"], "--ada_target must be in (0, 1)"),
    "ada_initial_p": (["--ada_initial_p", "2"], "--ada_initial_p must be in [0, 1]"),
    "ada_transforms": (
        ["--ada", "--ada_transforms", "xflip,shear"],
        "--ada_transforms 'xflip,shear': unknown transform shear",
    ),
    "yaml time_budget": (config_file("time_budget: 15 minutes\n"), "--time_budget '15 minutes' is not a duration"),
    # Found by hand: each of these trained (or started) a run that failed later.
    "eval_num_images below the metrics' minimum": (
        ["--eval_every", "2", "--eval_num_images", "5"],
        "--eval_num_images must be >= 6 (density and coverage",
    ),
    # Found by tests/test_flags_property.py: argparse's usage block, and a path the OS refuses.
    "config value like a flag": (["--config", "-x"], "argument --config: expected one argument; run with --help"),
    "config name too long": (["--config", "x" * 300 + ".yaml"], "File name too long; pass another path"),
    **{
        f"hub_model_id {repo}": (
            ["--push_to_hub", "--hub_model_id", repo],
            f"--hub_model_id {repo!r}: not a Hub repo id (",
        )
        for repo in ("a/b/c", "a b/c", "me/-tiny", "me/tiny.git", "me--x/tiny", "me/" + "x" * 100)
    },
}


@pytest.mark.parametrize("case", list(TRAIN_CASES))
def test_train_gan_bad_input(tmp_path, capsys, case):
    flags, match = TRAIN_CASES[case]
    (tmp_path / "notes.txt").write_text("a user's file next to the run")
    flags = flags(tmp_path) if callable(flags) else flags
    before = snapshot(tmp_path)
    line = one_line_error(SCRIPTS["train_gan"], [*TINY_GAN, "--output_dir", str(tmp_path / "run"), *flags], capsys)
    assert match in line, line
    assert snapshot(tmp_path) == before  # in particular no run folder and no config.json


def gen(exports, name="run/generator"):
    return ["--generator", str(exports / name)]


SAMPLE_CASES = {
    "not an export": (lambda e, tmp: ["--generator", str(tmp)], "not an exported generator folder (no config.json)"),
    "missing folder": (lambda e, tmp: ["--generator", str(tmp / "nope")], "does not exist"),
    "config.json only": (lambda e, tmp: gen(e, "config_only"), "config.json but no model.safetensors"),
    "truncated weights": (lambda e, tmp: gen(e, "truncated"), "could not load model.safetensors"),
    "run folder": (lambda e, tmp: gen(e, "run"), "this is a training run folder, not its export; pass "),
    "classifier folder": (lambda e, tmp: gen(e, "classifier"), "not a generator: its config.json has no z_dim"),
    "non-finite weights": (lambda e, tmp: gen(e, "non_finite"), "model.safetensors holds NaN/Inf in net.0.weight"),
    "output_dir is a file": (lambda e, tmp: [*gen(e), "--output_dir", str(tmp / "notes.txt")], "--output_dir"),
    "grid type": (lambda e, tmp: [*gen(e), "--grid", str(tmp / "x.xyz")], "--grid"),
    "grid is a folder": (lambda e, tmp: [*gen(e), "--grid", str(tmp)], "is a folder"),
    "class_label unconditional": (lambda e, tmp: [*gen(e), "--class_label", "3"], "is not class-conditional"),
    "num_images zero": (lambda e, tmp: [*gen(e), "--num_images", "0"], "--num_images must be > 0"),
    "class_grid unconditional": (lambda e, tmp: [*gen(e), "--class_grid"], "--class_grid: the generator in"),
    "truncation negative": (lambda e, tmp: [*gen(e), "--truncation", "-1"], "--truncation must be >= 0"),
    "resample threshold zero": (
        lambda e, tmp: [*gen(e), "--truncation", "0", "--truncation_mode", "resample"],
        "--truncation must be > 0",
    ),
    "truncation mode": (
        lambda e, tmp: [*gen(e), "--truncation_mode", "clip"],
        "--truncation_mode/--truncation-mode: invalid choice",
    ),
    "seeds malformed": (lambda e, tmp: [*gen(e), "--seeds", "3,x"], "--seeds '3,x': 'x' is not a seed"),
    "seeds and num_images": (lambda e, tmp: [*gen(e), "--seeds", "1-3"], "--num_images 2 but --seeds lists 3"),
    "interpolate one step": (lambda e, tmp: [*gen(e), "--interpolate", "1"], "--interpolate must be >= 2"),
    # Found by hand: a traceback, minutes of silence, and a seed its own regenerate command refused.
    "seeds huge": (
        lambda e, tmp: [*gen(e), "--seeds", "99999999999999999999"],
        "'99999999999999999999': seeds are 0..4294967295",
    ),
    "seeds range too long": (
        lambda e, tmp: [*gen(e), "--seeds", "0-100000000"],
        "--seeds '0-100000000': more than 100,000 seeds",
    ),
    "seeds reversed range": (lambda e, tmp: [*gen(e), "--seeds", "5-3"], "'5-3': seeds are 0..4294967295, a range"),
    "seed negative": (lambda e, tmp: [*gen(e), "--seed", "-1"], "--seed must be in [0, 4294967295]; got -1"),
    "seed past the last": (
        lambda e, tmp: [*gen(e), "--seed", "4294967295"],
        "--seed 4294967295 with --num_images 2 goes past the last seed",
    ),
    "generator name too long": (lambda e, tmp: ["--generator", "x" * 300], "File name too long; pass another path"),
    "interpolate too many images": (
        lambda e, tmp: [*gen(e), "--interpolate", str(2**31)],
        "--interpolate 2147483648 steps x 2 seeds is more than 100,000 images",
    ),
    "gif_ms past the GIF format": (lambda e, tmp: [*gen(e), "--gif_ms", "655360"], "--gif_ms must be at most 655350"),
    "num_images too many": (
        lambda e, tmp: [*gen(e), "--num_images", "100001"],
        "--num_images must be at most 100,000",
    ),
}


@pytest.mark.parametrize("case", list(SAMPLE_CASES))
def test_sample_gan_bad_input(exports, tmp_path, capsys, case):
    flags, match = SAMPLE_CASES[case]
    (tmp_path / "notes.txt").write_text("a user's file")
    before = snapshot(tmp_path, exports)
    argv = ["--num_images", "2", "--output_dir", str(tmp_path / "png"), *flags(exports, tmp_path)]
    line = one_line_error(SCRIPTS["sample_gan"], argv, capsys)
    assert match in line, line
    assert snapshot(tmp_path, exports) == before


@pytest.mark.parametrize(
    "flags,match",
    [
        (["--image_size", "32"], "--image_size 32: the generator in"),  # the generator is 16 px
        (["--channels", "3"], "--channels 3: the generator in"),  # and grey
        (["--num_images", "1"], "--num_images must be >= 6"),
        # Density and coverage need 6 images: 2 and 5 passed the check, then failed in the metrics.
        (["--num_images", "5"], "--num_images must be >= 6 (density and coverage"),
        (["--device", "cuda"], "--device cuda: no such device on this machine; this machine has: cpu"),
        (["--device", "cuda:3"], "--device cuda:3: no such device on this machine; this machine has: cpu"),
        (["--device", "gpu"], "--device gpu: not a device name; this machine has: cpu"),
    ],
)
def test_evaluate_gan_refuses_conflicts_at_once(exports, tmp_path, capsys, monkeypatch, flags, match):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # this machine as one without a GPU
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    before = snapshot(tmp_path, exports)
    argv = [*gen(exports), "--cache_dir", str(tmp_path / "cache"), "--output_dir", str(tmp_path / "eval"), *flags]
    line = one_line_error(SCRIPTS["evaluate_gan"], argv, capsys)
    assert match in line, line
    assert snapshot(tmp_path, exports) == before  # no classifier trained, nothing cached


EVALUATE_CASES = {
    **{
        name: SAMPLE_CASES[name]
        for name in (
            "not an export",
            "missing folder",
            "config.json only",
            "truncated weights",
            "run folder",
            "classifier folder",
            "non-finite weights",
        )
    },
    "output_dir is a file": (lambda e, tmp: [*gen(e), "--output_dir", str(tmp / "notes.txt")], "--output_dir"),
    "bootstrap negative": (lambda e, tmp: [*gen(e), "--bootstrap", "-1"], "--bootstrap must be >= 0"),
    "nearest_rows zero": (lambda e, tmp: [*gen(e), "--nearest", "--nearest_rows", "0"], "--nearest_rows must be > 0"),
}


@pytest.mark.parametrize("case", list(EVALUATE_CASES))
def test_evaluate_gan_bad_input(exports, tmp_path, capsys, case):
    flags, match = EVALUATE_CASES[case]
    (tmp_path / "notes.txt").write_text("a user's file")
    before = snapshot(tmp_path, exports)
    argv = ["--cache_dir", str(tmp_path / "cache"), *flags(exports, tmp_path)]
    line = one_line_error(SCRIPTS["evaluate_gan"], argv, capsys)
    assert match in line, line
    assert snapshot(tmp_path, exports) == before  # nothing cached, no eval_results.json


def test_evaluate_gan_on_a_classifier_folder(exports, tmp_path, capsys):
    line = one_line_error(SCRIPTS["evaluate_gan"], [*gen(exports, "classifier"), "--cache_dir", str(tmp_path)], capsys)
    assert "not a generator" in line and "distilbert" in line


def test_debug_flag_shows_the_traceback(tmp_path):
    with pytest.raises(UserError):
        SCRIPTS["train_gan"]([*TINY_GAN, "--output_dir", str(tmp_path / "run"), "--lr_g", "nan", "--debug"])


# ---- inputs that must be accepted -----------------------------------------------------------


def test_decompression_bombs_are_skipped_and_counted(tmp_path, monkeypatch, caplog):
    rng = np.random.default_rng(0)
    for i in range(3):
        write_png(tmp_path / "imgs" / f"ok{i}.png", rng.integers(0, 255, (20, 20), dtype=np.uint8), mode="L")
    # Real bombs for a lowered limit: above twice the limit PIL raises, between it only warns.
    write_png(tmp_path / "imgs" / "bomb_error.png", np.zeros((100, 100), dtype=np.uint8), mode="L")
    write_png(tmp_path / "imgs" / "bomb_warning.png", np.zeros((30, 30), dtype=np.uint8), mode="L")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 20 * 20 + 1)
    with caplog.at_level(logging.WARNING):
        data = load_image_data("folder", str(tmp_path / "imgs"), image_size=16, channels=1)
    assert len(data) == 3 and data.skipped_files == 2
    assert "2 of 5 image files" in caplog.text and "bomb_error.png" in caplog.text


def test_digits_in_three_channels(tmp_path):
    data = load_image_data("digits", image_size=16, channels=3)
    assert data.images.shape == (1797, 3, 16, 16)
    assert torch.equal(data.images[:, 0], data.images[:, 1]) and torch.equal(data.images[:, 0], data.images[:, 2])
    grey = load_image_data("digits", image_size=16, channels=1)
    assert torch.equal(data.images[:, :1], grey.images)
    assert (
        SCRIPTS["train_gan"]([*TINY_GAN, "--channels", "3", "--max_steps", "1", "--output_dir", str(tmp_path / "rgb")])
        == 0
    )
    assert json.loads((tmp_path / "rgb" / "generator" / "config.json").read_text())["channels"] == 3
