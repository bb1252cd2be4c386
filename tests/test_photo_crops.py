"""scripts/make_photo_crops.py: one sub-folder per bundled photo, the requested counts and size, a
held-out split of other crops, and a refusal to write into a folder that holds something."""

import pytest
from PIL import Image

from helpers import load_script, one_line_error
from run_fixtures import snapshot

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


@pytest.mark.parametrize(
    "flags,match",
    [
        (["--output_dir", "{tmp}"], "--output_dir {tmp}: exists and is not an empty folder"),
        (["--output_dir", "{tmp}/mine.txt"], "exists and is not an empty folder"),
        # before: argparse's usage block, then "argument --num_crops: invalid int value"
        (
            ["--output_dir", "{tmp}/new", "--num_crops", "2.5"],
            "argument --num_crops/--num-crops: invalid int value: '2.5'",
        ),
        (["--output_dir", "{tmp}/new", "--size", "0"], "--size must be > 0"),
        (["--output_dir", "{tmp}/new", "--num_heldout", "-1"], "--num_heldout must be >= 0"),
        # before: "100000 px crops" printed, every crop cut to the photo's 427 px
        (
            ["--output_dir", "{tmp}/new", "--crop_size", "100000"],
            "--crop_size 100000: larger than the smallest bundled photo's side (427 px); pass at most 427",
        ),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(tmp_path, capsys, flags, match):
    (tmp_path / "mine.txt").write_text("keep")
    before = snapshot(tmp_path)
    line = one_line_error(make_photo_crops, [f.format(tmp=tmp_path) for f in flags], capsys)
    assert match.format(tmp=tmp_path) in line, line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "flags,match",
    [
        # argparse's own errors printed its usage block above the message.
        (["--num_crops", "many"], "--num_crops/--num-crops: invalid int value: 'many'; run with --help"),
        (["--seed", "-1"], "--seed must be in [0, 4294967294]; got -1"),  # was numpy's traceback
        (["--num_heldout", "-5"], "--num_heldout must be >= 0; got -5"),  # was taken as 0
    ],
)
def test_a_bad_flag_value_is_one_line(tmp_path, capsys, flags, match):
    line = one_line_error(make_photo_crops, ["--output_dir", str(tmp_path / "new"), *flags], capsys)
    assert match in line and not (tmp_path / "new").exists(), line


def test_the_benchmark_judge_labels_each_crop_with_the_cell_of_its_centre(tmp_path):
    """benchmarks/photos/equal_time.py's judge classes: ``<photo>_r<row>c<col>``, the 3x3 cell holding the crop's
    centre, checked by locating each saved crop in its photo."""
    import numpy as np

    import benchmarks.photos.equal_time as bench
    from gan_accel.cli.make_photo_crops import bundled_photos

    photos = bundled_photos()
    bench.make_region_crops(tmp_path / "judge", 12, seed=2)
    folders = sorted(p.name for p in (tmp_path / "judge").iterdir())
    assert not (tmp_path / "judge.partial").exists() and len(list((tmp_path / "judge").rglob("*.png"))) == 12
    assert {name.rsplit("_r", 1)[0] for name in folders} == set(photos)
    # The same boxes, drawn again with the same seed, put every crop in the folder of its centre's cell.
    from gan_accel.cli.make_photo_crops import crop_boxes

    rng = np.random.default_rng(2)
    for name in sorted(photos):
        width, height = photos[name].size
        for number, (left, top, right, bottom) in enumerate(crop_boxes(photos[name], 4, 128, rng)):
            row, col = int((top + bottom) / 2 / height * 3), int((left + right) / 2 / width * 3)
            assert (tmp_path / "judge" / f"{name}_r{row}c{col}" / f"{number:05d}.png").is_file()
    bench.make_region_crops(tmp_path / "judge", 99, seed=5)  # an existing set is kept as it is
    assert len(list((tmp_path / "judge").rglob("*.png"))) == 12


def test_the_benchmark_runs_the_commands_it_names(tmp_path):
    """benchmarks/photos/equal_time.py: every toolkit run but ``defaults_cmd`` gets the same --time_budget;
    ``defaults_cmd`` is today's default command (no budget, no preset); the ADA comparison and
    ``--cut_variant`` runs train on the 500-image cut, ``--variant`` runs on the full folder."""
    import benchmarks.photos.equal_time as bench

    data = {"full": tmp_path / "full", "cut": tmp_path / "cut"}

    def argv(run, variants=None, cut_variants=None):
        both = {name: bench.Variant(flags) for name, flags in (variants or {}).items()}
        both.update({name: bench.Variant(flags, cut=True) for name, flags in (cut_variants or {}).items()})
        return bench.toolkit_argv(run, data, tmp_path / run, 15, 0, tmp_path, both)

    def value(args, flag):
        return args[args.index(flag) + 1] if flag in args else None

    for run in ("defaults", "auto", "ada", "noaug", "diffaugment"):
        assert value(argv(run), "--time_budget") == "900s"
    literal = argv("defaults_cmd")
    assert "--time_budget" not in literal and value(literal, "--preset") == "none"
    assert value(literal, "--channels") == "3" and value(literal, "--data_dir") == str(data["full"])
    for run in bench.CUT_RUNS:
        assert value(argv(run), "--data_dir") == str(data["cut"])
    cut = argv("k50", cut_variants={"k50": ["--ada_kimg", "50"]})
    assert value(cut, "--data_dir") == str(data["cut"]) and cut[-2:] == ["--ada_kimg", "50"]
    full = argv("bs32", variants={"bs32": ["--batch_size", "32"]})
    assert value(full, "--data_dir") == str(data["full"]) and full[-2:] == ["--batch_size", "32"]
    assert "--ada" not in argv("ada") and value(argv("noaug"), "--ada") == "False"
