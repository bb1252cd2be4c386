"""Data paths under odd input: EXIF orientation on every decode path, file names that are not
UTF-8, a stray image beside class folders, a broken metrics.jsonl line, a worker's error, and
the decode cache's full-content hashes."""

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from gan_accel.data import load_image_data
from gan_accel.data.decode import FolderImages
from helpers import load_script

CPU = torch.device("cpu")


def exif_rotated_jpeg(path: Path) -> None:
    """A camera JPEG: the stored pixels are the upright picture (bright top half) turned 90 degrees
    counter-clockwise, with EXIF Orientation 6 ("turn 90 degrees clockwise to display")."""
    upright = np.zeros((32, 32, 3), dtype=np.uint8)
    upright[:16] = 255
    exif = Image.Exif()
    exif[0x0112] = 6
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.ascontiguousarray(np.rot90(upright, 1))).save(path, exif=exif, quality=95)


def assert_upright(image: torch.Tensor) -> None:
    """uint8 [C, S, S] of the picture above: bright top half, dark bottom half."""
    assert image[:, :12].float().mean() > 200 and image[:, -12:].float().mean() < 50, image[0, :, 0]


def test_exif_orientation_is_applied_on_every_path(tmp_path):
    from gan_accel.cyclegan.translate import translate_folder

    exif_rotated_jpeg(tmp_path / "photos" / "camera.jpg")
    assert_upright(load_image_data("folder", str(tmp_path / "photos"), image_size=32, channels=3).images[0])
    assert_upright(FolderImages([tmp_path / "photos" / "camera.jpg"], 32, 3)[0][0])  # the decode cache, streaming
    translate_folder(torch.nn.Identity(), tmp_path / "photos", tmp_path / "out", 32, 3)
    translated = np.array(Image.open(tmp_path / "out" / "camera.jpg").convert("RGB"))
    assert_upright(torch.from_numpy(translated).permute(2, 0, 1))


def test_exif_orientation_through_datasets_imagefolder(tmp_path, monkeypatch):
    """The reference: `datasets` applies the orientation itself; applying it again must not turn
    the image a second time."""
    datasets = pytest.importorskip("datasets")
    from gan_accel.data.source import open_image_source
    from gan_accel.gan.config import GANDataArguments

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf"))
    exif_rotated_jpeg(tmp_path / "photos" / "camera.jpg")
    args = GANDataArguments(
        dataset="imagefolder",
        data_dir=str(tmp_path / "photos"),
        image_size=32,
        channels=3,
        data_cache_dir="none",
        data_decode_workers=0,
        data_in_memory="yes",
    )
    source = open_image_source(args, CPU, print_fn=lambda *a: None, show_progress=False)
    assert_upright(source.images[0])


def open_folder(root, cache, **kw):
    from gan_accel.data.source import open_image_source
    from gan_accel.gan.config import GANDataArguments

    kw.setdefault("image_size", 16)
    args = GANDataArguments(
        dataset="folder", data_dir=str(root), channels=3, data_cache_dir=str(cache), data_decode_workers=0, **kw
    )
    return open_image_source(args, CPU, print_fn=lambda *a: None, show_progress=False)


def test_file_names_that_are_not_utf8_are_cached(tmp_path):
    from data_fixtures import make_folder

    root = make_folder(tmp_path / "images", per_class=3)
    odd = Path(os.fsdecode(bytes(root / "cats") + b"/bad\xff\xfename.png"))
    try:
        (root / "cats" / "000.png").rename(odd)
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses file names that are not UTF-8")
    first = open_folder(root, tmp_path / "cache")
    again = open_folder(root, tmp_path / "cache")
    assert len(first) == 6 and first.labels.tolist() == [0, 0, 0, 1, 1, 1]
    assert again.cache.path == first.cache.path and torch.equal(again.images, first.images)


def test_a_file_deleted_during_a_streamed_run_is_one_line(tmp_path):
    """--data_cache_dir none: the folder is listed at the start and decoded by the workers, batch
    by batch; a file gone by then is the worker's one-line message, without its traceback."""
    from data_fixtures import make_folder
    from gan_accel.data import ResumableSampler
    from gan_accel.errors import UserError

    root = make_folder(tmp_path / "images", per_class=8)
    source = open_folder(root, "none", data_in_memory="no")
    (root / "cats" / "003.png").unlink()
    loader = source.make_loader(16, ResumableSampler(len(source), seed=0), 1, CPU)
    with pytest.raises(UserError) as info:
        list(loader)
    message = str(info.value)
    assert message.startswith(f"{root / 'cats' / '003.png'}: unreadable image") and "\n" not in message, message


def test_a_corrupt_file_in_a_streamed_run_is_one_line(tmp_path, capsys):
    from data_fixtures import FOLDER_GAN, make_folder
    from run_fixtures import user_error

    root = make_folder(tmp_path / "images", per_class=8)
    (root / "dogs" / "zz.png").write_bytes(b"not a png")
    argv = [
        *FOLDER_GAN,
        "--data_dir",
        str(root),
        "--data_cache_dir",
        "none",
        "--data_in_memory",
        "no",
        "--dataloader_num_workers",
        "1",
        "--max_steps",
        "3",
        "--output_dir",
        str(tmp_path / "run"),
    ]
    line = user_error(load_script("train_gan").main, argv, capsys, bar="gan")
    assert f"{root / 'dogs' / 'zz.png'}: unreadable image" in line


def overwrite_start_keep_mtime(entry):
    """100,000 bytes at the start of images.u8 overwritten, its modification time put back."""
    path = entry / "images.u8"
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.write(np.random.default_rng(0).integers(0, 255, 100_000, dtype=np.uint8).tobytes())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def flip_one_byte(entry):
    path = entry / "images.u8"
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))


def shift_labels(entry):
    labels = np.load(entry / "labels.npy")
    np.save(entry / "labels.npy", np.roll(labels, 1))


def reverse_class_names(entry):
    import json

    meta = json.loads((entry / "meta.json").read_text())
    meta["class_names"] = meta["class_names"][::-1]
    (entry / "meta.json").write_text(json.dumps(meta, indent=1))


DAMAGE = {
    "start of images.u8 overwritten, mtime kept": overwrite_start_keep_mtime,
    "one byte flipped mid-file": flip_one_byte,
    "labels.npy shifted": shift_labels,
    "class_names reversed in meta.json": reverse_class_names,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_cache_entry_fails_its_hash_and_is_rebuilt(tmp_path, capsys, damage):
    """images.u8 here is 40 x 3 x 64 x 64 = 480 KB, well past the last 64 KiB that the former
    check hashed."""
    from data_fixtures import make_folder

    root = make_folder(tmp_path / "images", per_class=20)
    first = open_folder(root, tmp_path / "cache", image_size=64)
    DAMAGE[damage](first.cache.path)
    capsys.readouterr()
    again = open_folder(root, tmp_path / "cache", image_size=64)
    assert "does not match its recorded hash" in capsys.readouterr().out
    fresh = load_image_data("folder", str(root), image_size=64, channels=3)
    assert torch.equal(again.images, fresh.images) and torch.equal(again.labels, fresh.labels)
    assert again.class_names == fresh.class_names
