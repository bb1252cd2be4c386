"""Bad input: one clear line naming the flag or file, exit code 2, no traceback, nothing lost."""
import logging

import numpy as np
import pytest
from PIL import Image

from gan_accel.data import load_image_data
from gan_accel.errors import UserError
from helpers import TINY_GAN, load_script

train_gan = load_script("train_gan").main
sample_gan = load_script("sample_gan").main


def user_error(main, argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], err
    return err[0]


def write_png(path, array, mode=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array, mode=mode).save(path)


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "images"
    rng = np.random.default_rng(0)
    for cls in ("cats", "dogs"):
        for i in range(3):
            write_png(root / cls / f"{i}.png", rng.integers(0, 255, (20, 20, 3), dtype=np.uint8))
    return root


@pytest.mark.parametrize("argv,match", [
    (["--lr_g", "0"], "--lr_g must be > 0"),
    (["--lr_d", "-0.1"], "--lr_d must be > 0"),
    (["--batch_size", "0"], "--batch_size must be > 0"),
    (["--max_steps", "0"], "--max_steps must be > 0"),
    (["--image_size", "48"], "--image_size 48 is not supported by --arch dcgan"),
    (["--loss", "wasserstein"], "argument --loss: invalid choice: 'wasserstein'"),
    (["--arch", "stylegan9"], "argument --arch: invalid choice"),
    (["--dataset", "imagenet"], "argument --dataset: invalid choice"),
    (["--channels", "2"], "--channels must be 1 or 3"),
    (["--warmup_steps", "50", "--max_steps", "10"], "--warmup_steps (50) must be smaller than --max_steps (10)"),
    (["--adam_beta1", "1.5"], "--adam_beta1 must be in [0, 1)"),
    (["--mixed_precision", "fp8"], "--mixed_precision/--mixed-precision: invalid choice: 'fp8'"),
    (["--batch_size", "4096"], "--batch_size 4096 x 1 processes is larger than the dataset (1797 images)"),
    (["--no_such_flag", "1"], "not used by the HfArgumentParser: ['--no_such_flag', '1']"),
])
def test_invalid_flags(tmp_path, capsys, argv, match):
    line = user_error(train_gan, [*TINY_GAN, "--output_dir", str(tmp_path / "run"), *argv], capsys)
    assert match in line


def test_invalid_value_in_config_file(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("loss: wasserstein\n")
    line = user_error(train_gan, ["--config", str(cfg), "--output_dir", str(tmp_path / "run")], capsys)
    assert "--loss must be one of" in line


def test_malformed_config_file(tmp_path, capsys):
    cfg = tmp_path / "broken.yaml"
    cfg.write_text("max_steps: [1, 2\nloss: hinge\n")
    line = user_error(train_gan, ["--config", str(cfg), "--output_dir", str(tmp_path / "run")], capsys)
    assert "broken.yaml" in line and "YAML/JSON" in line


@pytest.mark.parametrize("case,match", [
    ("missing", "not a folder"),
    ("empty", "no images"),
    ("file", "not a folder"),
    ("unset", "--dataset folder needs --data_dir"),
])
def test_bad_data_folder(tmp_path, capsys, case, match):
    path = {"missing": tmp_path / "nope", "empty": tmp_path / "empty", "file": tmp_path / "file.png",
            "unset": None}[case]
    if case == "empty":
        path.mkdir()
        (path / "notes.txt").write_text("no images here")
    if case == "file":
        path.write_bytes(b"x")
    data_flags = ["--dataset", "folder"] + (["--data_dir", str(path)] if path else [])
    line = user_error(train_gan, [*TINY_GAN, *data_flags, "--output_dir", str(tmp_path / "run")], capsys)
    assert match in line and (path is None or str(path) in line)
    assert not (tmp_path / "run").exists()


def test_torchvision_dataset_without_files(tmp_path, capsys):
    line = user_error(train_gan, [*TINY_GAN, "--dataset", "mnist", "--data_dir", str(tmp_path / "mnist"),
                                  "--output_dir", str(tmp_path / "run")], capsys)
    assert "no mnist training set found" in line and "--download" in line


def test_corrupt_and_truncated_images_are_skipped_and_counted(folder, caplog):
    (folder / "cats" / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)
    good = (folder / "dogs" / "0.png").read_bytes()
    (folder / "dogs" / "truncated.png").write_bytes(good[: len(good) // 2])
    with caplog.at_level(logging.WARNING):
        data = load_image_data("folder", str(folder), image_size=16, channels=3)
    assert len(data) == 6 and data.skipped_files == 2
    assert data.class_names == ["cats", "dogs"] and data.labels.tolist() == [0, 0, 0, 1, 1, 1]
    assert "2 of 8 image files" in caplog.text


def test_only_corrupt_images_is_an_error(tmp_path, capsys):
    root = tmp_path / "bad"
    root.mkdir()
    for i in range(3):
        (root / f"{i}.jpg").write_bytes(b"not a jpeg")
    line = user_error(train_gan, [*TINY_GAN, "--dataset", "folder", "--data_dir", str(root),
                                  "--output_dir", str(tmp_path / "run")], capsys)
    assert "none of the 3 image files could be read" in line


def test_rgba_palette_and_16bit_images_are_converted(tmp_path):
    root = tmp_path / "modes"
    rgba = np.zeros((16, 16, 4), dtype=np.uint8)
    rgba[..., 0] = 200
    rgba[..., 3] = 255
    rgba[:8, :, 3] = 0  # top half transparent -> composited on black
    write_png(root / "rgba.png", rgba, mode="RGBA")
    palette = Image.new("P", (16, 16), color=1)
    palette.putpalette([0, 0, 0, 0, 255, 0] + [0] * 762)
    palette.save(root / "palette.png")
    deep = (np.ones((16, 16)) * 65535).astype(np.uint16)
    Image.fromarray(deep).save(root / "deep16.png")
    data = load_image_data("folder", str(root), image_size=16, channels=3)
    by_name = dict(zip(["deep16", "palette", "rgba"], data.images))
    assert by_name["deep16"].min() == 255                       # 16-bit white stays white
    assert by_name["palette"][1].min() == 255 and by_name["palette"][0].max() == 0  # green
    assert by_name["rgba"][0, 12].tolist() == [200] * 16        # opaque half keeps its red
    assert by_name["rgba"][0, 2].tolist() == [0] * 16           # transparent half on black
    assert data.labels is None


def test_small_images_are_upscaled_with_a_warning(tmp_path, caplog):
    write_png(tmp_path / "s" / "tiny.png", np.full((8, 8), 128, dtype=np.uint8), mode="L")
    with caplog.at_level(logging.WARNING):
        data = load_image_data("folder", str(tmp_path / "s"), image_size=32, channels=1)
    assert data.images.shape == (1, 1, 32, 32) and "smaller than --image_size 32" in caplog.text


def test_conditional_needs_labels(tmp_path, capsys):
    write_png(tmp_path / "flat" / "a.png", np.zeros((16, 16), dtype=np.uint8), mode="L")
    line = user_error(train_gan, [*TINY_GAN, "--dataset", "folder", "--data_dir", str(tmp_path / "flat"),
                                  "--conditional", "--output_dir", str(tmp_path / "run")], capsys)
    assert "--conditional needs labelled data" in line


def test_sample_gan_bad_generator_folder(tmp_path, capsys):
    line = user_error(sample_gan, ["--generator", str(tmp_path), "--num_images", "2", "--output_dir", str(tmp_path / "o")], capsys)
    assert "not an exported generator folder" in line


def test_debug_flag_shows_the_traceback(tmp_path):
    with pytest.raises(UserError):
        train_gan([*TINY_GAN, "--output_dir", str(tmp_path / "run"), "--lr_g", "0", "--debug"])
