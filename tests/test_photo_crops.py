"""scripts/make_photo_crops.py: one sub-folder per bundled photo, the requested counts and size, a
held-out split of other crops, and a refusal to write into a folder that holds something."""

from PIL import Image

from helpers import load_script, one_line_error

make_photo_crops = load_script("make_photo_crops").main


def test_crops_per_photo_with_a_heldout_split(tmp_path):
    out = tmp_path / "photos"
    assert (
        make_photo_crops(
            ["--output_dir", str(out), "--num_crops", "7", "--num_heldout", "3", "--crop_size", "48", "--size", "16"]
        )
        == 0
    )
    train = sorted(p.relative_to(out / "train").as_posix() for p in (out / "train").rglob("*.png"))
    assert train == [
        "china/00000.png",
        "china/00001.png",
        "china/00002.png",
        "flower/00000.png",
        "flower/00001.png",
        "grace_hopper/00000.png",
        "grace_hopper/00001.png",
    ]
    assert len(list((out / "heldout").rglob("*.png"))) == 3
    with Image.open(out / "train" / "china" / "00000.png") as image:
        assert image.size == (16, 16) and image.mode == "RGB"
    before = (out / "train" / "china" / "00000.png").read_bytes()
    assert before != (out / "heldout" / "china" / "00000.png").read_bytes()  # another seed, other crops


def test_a_folder_with_files_is_refused(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("keep")
    line = one_line_error(make_photo_crops, ["--output_dir", str(tmp_path)], capsys)
    assert "--output_dir" in line and (tmp_path / "mine.txt").read_text() == "keep"
