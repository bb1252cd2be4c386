"""Bad input: one clear line naming the flag or file, exit code 2, no traceback, nothing lost.

The GAN scripts' cases are the table in test_bad_input_gan.py; here the image decoding that must
accept odd files, and the ``user_error`` helper."""

import logging

import numpy as np
import pytest
from PIL import Image

from gan_accel.data import load_image_data
from helpers import load_script, write_png

train_gan = load_script("train_gan").main  # for the user_error cases of other paths


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "images"
    rng = np.random.default_rng(0)
    for cls in ("cats", "dogs"):
        for i in range(3):
            write_png(root / cls / f"{i}.png", rng.integers(0, 255, (20, 20, 3), dtype=np.uint8))
    return root


def test_corrupt_and_truncated_images_are_skipped_and_counted(folder, caplog):
    (folder / "cats" / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)
    good = (folder / "dogs" / "0.png").read_bytes()
    (folder / "dogs" / "truncated.png").write_bytes(good[: len(good) // 2])
    with caplog.at_level(logging.WARNING):
        data = load_image_data("folder", str(folder), image_size=16, channels=3)
    assert len(data) == 6 and data.skipped_files == 2
    assert data.class_names == ["cats", "dogs"] and data.labels.tolist() == [0, 0, 0, 1, 1, 1]
    assert "2 of 8 image files" in caplog.text


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
    assert by_name["deep16"].min() == 255  # 16-bit white stays white
    assert by_name["palette"][1].min() == 255 and by_name["palette"][0].max() == 0  # green
    assert by_name["rgba"][0, 12].tolist() == [200] * 16  # opaque half keeps its red
    assert by_name["rgba"][0, 2].tolist() == [0] * 16  # transparent half on black
    assert data.labels is None


def test_small_images_are_upscaled_with_a_warning(tmp_path, caplog):
    write_png(tmp_path / "s" / "tiny.png", np.full((8, 8), 128, dtype=np.uint8), mode="L")
    with caplog.at_level(logging.WARNING):
        data = load_image_data("folder", str(tmp_path / "s"), image_size=32, channels=1)
    assert data.images.shape == (1, 1, 32, 32) and "smaller than --image_size 32" in caplog.text
