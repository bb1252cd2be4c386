"""Bad input to the CycleGAN scripts: one clear line naming the flag or folder, exit code 2, no
traceback, nothing on disk written or lost."""

import numpy as np
import pytest
from PIL import Image

from cyclegan_fixtures import TINY_CYCLEGAN, make_domains, write_png
from gan_accel.cyclegan.data import load_domains
from gan_accel.cyclegan.export import save_translator
from gan_accel.cyclegan.models import ResnetGenerator
from helpers import load_script
from helpers import one_line_error as user_error

train_cyclegan = load_script("train_cyclegan").main
translate = load_script("translate").main


@pytest.mark.parametrize(
    "case,match",
    [
        ("missing", "not a folder"),
        ("no_trainB", "no trainB/ folder; the layout is DATA/trainA and DATA/trainB"),
        ("empty_trainA", "trainA: no images"),
        ("corrupt_trainB", "trainB: none of the 2 image files could be read"),
        ("unset", "--dataset folder needs --data_dir"),
    ],
)
def test_bad_data_folder(tmp_path, capsys, case, match):
    root = tmp_path / "data"
    if case != "missing":
        make_domains(root, num_a=2, num_b=2)
    if case == "no_trainB":
        for f in (root / "trainB").iterdir():
            f.unlink()
        (root / "trainB").rmdir()
    if case == "empty_trainA":
        for f in (root / "trainA").iterdir():
            f.unlink()
        (root / "trainA" / "notes.txt").write_text("no images here")
    if case == "corrupt_trainB":
        for f in (root / "trainB").iterdir():
            f.write_bytes(b"not a png")
    data_flags = ["--dataset", "folder"] + ([] if case == "unset" else ["--data_dir", str(root)])
    line = user_error(train_cyclegan, [*TINY_CYCLEGAN, *data_flags, "--output_dir", str(tmp_path / "run")], capsys)
    assert match in line and (case == "unset" or str(root) in line)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--image_size", "18"], "--image_size must be a multiple of 4"),
        (["--image_size", "8", "--load_size", "8"], "--image_size 8 is too small for --d_layers 2"),
        (["--d_layers", str(2**32)], "--image_size 16 is too small for --d_layers 4294967296 (at least 3 x 2**"),
        (["--load_size", "12"], "--load_size (12) must be >= --image_size (16)"),
        (["--lambda_cycle", "-1"], "--lambda_cycle must be >= 0"),
        (["--loss", "wgan_gp"], "argument --loss: invalid choice: 'wgan_gp'"),
        (["--lr_scheduler", "step"], "argument --lr_scheduler/--lr-scheduler: invalid choice"),
        (["--n_epochs", "0", "--n_epochs_decay", "0"], "nothing to train"),
        (["--batch_size", "4096"], "--batch_size 4096 x 1 processes is larger than the data (899 pairs an epoch)"),
        (["--data_dir", "somewhere"], "--data_dir somewhere is only read with --dataset folder"),
    ],
)
def test_invalid_flags(tmp_path, capsys, argv, match):
    line = user_error(train_cyclegan, [*TINY_CYCLEGAN, "--output_dir", str(tmp_path / "run"), *argv], capsys)
    assert match in line
    assert not (tmp_path / "run").exists()


def test_folder_with_user_files_is_kept_and_a_previous_run_refused(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "notes.txt").write_text("mine")
    assert train_cyclegan([*TINY_CYCLEGAN, "--output_dir", str(run), "--max_steps", "1"]) == 0
    assert (run / "notes.txt").read_text() == "mine"
    capsys.readouterr()
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    line = user_error(train_cyclegan, [*TINY_CYCLEGAN, "--output_dir", str(run), "--max_steps", "1"], capsys)
    assert "holds another run" in line and sorted(p.relative_to(run) for p in run.rglob("*")) == before


def test_mixed_image_modes_are_converted(tmp_path):
    """RGBA, palette, 16-bit and RGB files in one domain all decode to --channels."""
    root = make_domains(tmp_path / "data", num_a=2, num_b=2)
    rgba = np.zeros((20, 20, 4), dtype=np.uint8)
    rgba[..., 0], rgba[..., 3] = 200, 255
    write_png(root / "trainA" / "rgba.png", rgba, mode="RGBA")
    Image.new("P", (20, 20), color=1).save(root / "trainA" / "palette.png")
    Image.fromarray((np.ones((20, 20)) * 65535).astype(np.uint16)).save(root / "trainB" / "deep16.png")
    write_png(root / "trainB" / "rgb.png", np.full((24, 20, 3), 90, dtype=np.uint8))
    domains = load_domains("folder", str(root), 16, 3)
    assert domains.train_a.images.shape == (4, 3, 16, 16) and domains.train_b.images.shape == (4, 3, 16, 16)
    assert domains.test_a is None and not domains.labelled


def test_translate_refuses_to_overwrite_and_bad_folders(tmp_path, capsys):
    gen = save_translator(ResnetGenerator(1, 4, 1), tmp_path / "generator_A2B", "A2B", 16)
    images = make_domains(tmp_path / "data", num_a=2, num_b=1) / "trainA"
    out = tmp_path / "out"
    out.mkdir()
    (out / "000.png").write_bytes(b"precious")
    line = user_error(
        translate, ["--generator", str(gen), "--input_dir", str(images), "--output_dir", str(out)], capsys
    )
    assert "1 of the output files already exist" in line and "--overwrite" in line
    assert (out / "000.png").read_bytes() == b"precious" and not (out / "001.png").exists()

    line = user_error(
        translate, ["--generator", str(tmp_path), "--input_dir", str(images), "--output_dir", str(out)], capsys
    )
    assert f"a training run folder, not its export; pass {gen}" in line  # it holds generator_A2B
    line = user_error(
        translate, ["--generator", str(gen), "--input_dir", str(tmp_path / "nope"), "--output_dir", str(out)], capsys
    )
    assert "--input_dir" in line and "not a folder" in line


@pytest.mark.parametrize(
    "case,match",
    [
        ("missing", "does not exist"),
        ("config_only", "config.json but no model.safetensors; the export is incomplete"),
        ("truncated", "could not load model.safetensors"),
    ],
)
def test_translate_refuses_an_incomplete_export_in_one_line(tmp_path, capsys, case, match):
    gen = save_translator(ResnetGenerator(1, 4, 1), tmp_path / "generator_A2B", "A2B", 16)
    weights = gen / "model.safetensors"
    if case == "missing":
        gen = tmp_path / "nope"
    elif case == "config_only":
        weights.unlink()
    else:
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    images = make_domains(tmp_path / "data", num_a=1, num_b=1) / "trainA"
    line = user_error(
        translate, ["--generator", str(gen), "--input_dir", str(images), "--output_dir", str(tmp_path / "out")], capsys
    )
    assert match in line and not (tmp_path / "out").exists()


def test_a_translator_with_non_finite_weights_is_not_exported(tmp_path):
    from gan_accel.errors import UserError

    G = ResnetGenerator(1, 4, 1)
    next(G.parameters()).data.view(-1)[0] = float("nan")
    with pytest.raises(UserError, match="not exporting .*not finite"):
        save_translator(G, tmp_path / "generator_A2B", "A2B", 16)
    assert not (tmp_path / "generator_A2B").exists()


def no_gpu(monkeypatch):
    """This machine as one without a GPU, whatever it has."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


def nested_input(tmp):
    """--input_dir inside --output_dir, with a sub-folder named like the input: out/x/x/a.png's
    translation would be written to out/x/a.png, inside the input."""
    inner = tmp / "out" / "x"
    make_domains(inner / "x", num_a=1, num_b=1)
    return [str(inner), str(tmp / "out")]


# name -> (function of the test folder returning [input_dir, output_dir, *more flags], text of the error)
TRANSLATE_CASES = {
    "output is the input": (
        lambda tmp: [str(tmp / "data/trainA"), str(tmp / "data/trainA"), "--overwrite"],
        "is the same as --input_dir",
    ),
    "output is the input via ..": (
        lambda tmp: [str(tmp / "data/trainA"), str(tmp / "data/trainB/../trainA"), "--overwrite"],
        "is the same as --input_dir",
    ),
    "output inside the input": (lambda tmp: [str(tmp / "data"), str(tmp / "data/out")], "is inside --input_dir"),
    "outputs would land in the input": (nested_input, "which --output_dir"),
    "output is a file": (
        lambda tmp: [str(tmp / "data/trainA"), str(tmp / "notes.txt")],
        "notes.txt: is a file, not a folder",
    ),
    "output under a file": (lambda tmp: [str(tmp / "data/trainA"), str(tmp / "notes.txt/out")], "notes.txt is a file"),
    "device cuda without a GPU": (
        lambda tmp: [str(tmp / "data/trainA"), str(tmp / "new"), "--device", "cuda"],
        "--device cuda: no such device on this machine; this machine has: cpu",
    ),
    "device gpu": (
        lambda tmp: [str(tmp / "data/trainA"), str(tmp / "new"), "--device", "gpu"],
        "--device gpu: not a device name; this machine has: cpu",
    ),
}


@pytest.mark.parametrize("case", list(TRANSLATE_CASES))
def test_translate_bad_input_changes_nothing(tmp_path, capsys, monkeypatch, case):
    from run_fixtures import snapshot

    no_gpu(monkeypatch)
    make_domains(tmp_path / "data", num_a=2, num_b=1)
    (tmp_path / "notes.txt").write_text("a user's file")
    gen = save_translator(ResnetGenerator(1, 4, 1), tmp_path / "generator_A2B", "A2B", 16)
    make_flags, match = TRANSLATE_CASES[case]
    input_dir, output_dir, *more = make_flags(tmp_path)
    before = snapshot(tmp_path)
    argv = ["--generator", str(gen), "--input_dir", input_dir, "--output_dir", output_dir, *more]
    line = user_error(translate, argv, capsys)
    assert match in line, line
    assert snapshot(tmp_path) == before
