"""--preset auto: the choices for a few folder shapes, an explicit flag wins, and the script
applies it by default to a folder (and only then)."""

import torch

from gan_accel.config import RunArguments
from gan_accel.gan.config import GANDataArguments, GANEvalArguments, GANModelArguments, GANTrainArguments
from gan_accel.gan.preset import DataFacts, apply, choose, explicit_flags, fit_to_flags, folder_facts, wanted
from helpers import load_script, write_png

train_gan = load_script("train_gan").main


def chosen(**facts):
    base = dict(num_images=8000, native_size=64, colour=True, labelled=True, device="cpu")
    return {c.field: c.value for c in choose(DataFacts(**{**base, **facts}))}


def test_photo_crops_on_a_cpu():
    c = chosen()
    assert c["arch"] == "fastgan" and c["image_size"] == 32 and c["channels"] == 3 and c["g_channels"] == 48
    assert c["batch_size"] == 64 and c["ada"] is False and "ada_kimg" not in c and "ada_target" not in c
    assert c["num_evaluations"] == 10
    assert c["lr_g"] == c["lr_d"] == 1.2e-3  # FastGAN with R1: measured on 8,000 photo crops
    assert c["r1_gamma"] == 0.1  # lazy R1 keeps FastGAN's D from saturating: measured there too
    # The DCGAN on a large folder of small or unknown images keeps the CPU rate it was measured at.
    assert chosen(native_size=28)["lr_g"] == chosen(num_images=None)["lr_d"] == 4e-4
    assert chosen(num_images=None)["ada"] is False  # a streamed dataset of unknown size


def test_fastgan_only_where_it_was_measured_to_win():
    # FastGAN won at equal time on 8,000 photo crops (64 px) and lost on the 1,797 8 px digits.
    assert chosen(num_images=2000)["arch"] == chosen(native_size=32)["arch"] == "fastgan"
    for facts in (
        dict(num_images=1999),
        dict(native_size=28),
        dict(num_images=1797, native_size=8, colour=False),
        dict(num_images=None),
        dict(native_size=None),
    ):
        assert chosen(**facts)["arch"] == "dcgan", facts
        assert "r1_gamma" not in chosen(**facts), facts  # R1 was measured with FastGAN only
    assert chosen(device="cuda")["arch"] == "resnet"


def test_a_progressive_run_keeps_the_dcgan(tmp_path, capsys):
    choices = choose(DataFacts(8000, 64, True, True, "cpu"))
    fitted = {c.field: c for c in fit_to_flags(choices, progressive=True)}
    assert fitted["arch"].value == "dcgan" and "--progressive_share" in fitted["arch"].reason
    assert fit_to_flags(choices, progressive=False) == choices
    # R1 was measured with FastGAN only: a run that trains the DCGAN, because of the progressive
    # flag or the user's --arch, trains without it.
    assert fitted["r1_gamma"].value == 0.0 and "--arch dcgan" in fitted["r1_gamma"].reason
    by_flag = {c.field: c.value for c in fit_to_flags(choices, progressive=False, arch="dcgan")}
    assert by_flag["r1_gamma"] == 0.0 and by_flag["arch"] == "fastgan"  # apply() keeps the user's arch
    assert {c.field: c.value for c in fit_to_flags(choices, False, "fastgan")}["r1_gamma"] == 0.1
    # FastGAN's rate of 1.2e-3 holds with R1 only: the DCGAN, or FastGAN with the user's --r1_gamma 0,
    # trains at the CPU rate of 4e-4; any other gamma keeps 1.2e-3.
    assert fitted["lr_g"].value == fitted["lr_d"].value == 4e-4 and "--arch dcgan" in fitted["lr_g"].reason
    assert by_flag["lr_g"] == by_flag["lr_d"] == 4e-4
    for gamma, rate in ((0.0, 4e-4), (None, 1.2e-3), (0.3, 1.2e-3)):
        fitted_r1 = {c.field: c for c in fit_to_flags(choices, False, None, gamma)}
        assert fitted_r1["lr_g"].value == fitted_r1["lr_d"].value == rate, gamma
        assert fitted_r1["r1_gamma"].value == 0.1  # apply() keeps the user's gamma
    assert "--r1_gamma 0" in {c.field: c for c in fit_to_flags(choices, False, None, 0.0)}["lr_d"].reason
    # Through the script: a photo folder big enough for FastGAN, with --progressive_share, is not
    # refused for a combination the user never asked for.
    import numpy as np

    rng = np.random.default_rng(0)
    for i in range(2000):
        write_png(tmp_path / "d" / "ab"[i % 2] / f"{i}.png", rng.integers(0, 255, (32, 32, 3), dtype=np.uint8))
    folder = ["--dataset", "folder", "--data_dir", str(tmp_path / "d"), "--output_dir", str(tmp_path / "o")]
    assert train_gan([*folder, "--progressive_share", "0.5", "--dry_run"]) == 0
    out = capsys.readouterr().out
    assert "  --arch dcgan: your --progressive_share grows the DCGAN only" in out and '"arch": "dcgan"' in out
    assert '"r1_gamma": 0.0' in out
    assert train_gan([*folder, "--dry_run"]) == 0
    out = capsys.readouterr().out
    assert '"arch": "fastgan"' in out and '"r1_gamma": 0.1' in out and '"lr_g": 0.0012' in out
    assert train_gan([*folder, "--arch", "dcgan", "--dry_run"]) == 0
    out = capsys.readouterr().out
    assert "  --r1_gamma 0.0: R1 was measured with FastGAN only, not --arch dcgan" in out
    assert '"arch": "dcgan"' in out and '"r1_gamma": 0.0' in out and '"lr_d": 0.0004' in out
    assert train_gan([*folder, "--r1_gamma", "0", "--dry_run"]) == 0
    out = capsys.readouterr().out
    assert "  --lr_g 0.0004: your --r1_gamma 0: without R1" in out
    assert '"arch": "fastgan"' in out and '"r1_gamma": 0.0' in out and '"lr_g": 0.0004' in out


def test_a_small_grey_folder_gets_small_batches_fast_ada_and_16_px():
    c = chosen(num_images=100, native_size=8, colour=False)
    assert c["channels"] == 1 and c["image_size"] == 16 and c["batch_size"] == 25
    assert c["ada"] is True and c["ada_kimg"] == 5.0 and c["ada_target"] == 0.8
    assert c["lr_g"] == c["lr_d"] == 2e-4  # the rate ADA was measured at on 500 crops
    assert chosen(num_images=1999)["ada"] is True and chosen(num_images=2000)["ada"] is False


def test_a_large_folder_on_a_gpu():
    c = chosen(num_images=100_000, native_size=256, device="cuda")
    assert c["arch"] == "resnet" and c["image_size"] == 64 and c["loss"] == "hinge" and c["d_norm"] == "spectral"
    assert c["ada"] is False and c["g_channels"] == 128 and c["lr_g"] == c["lr_d"] == 2e-4


def test_no_class_folders_no_domain_evaluation_and_a_long_budget_widens():
    c = chosen(labelled=False, budget_s=7200)
    assert c["num_evaluations"] == 0 and "eval_num_images" not in c and c["g_channels"] == 64


def test_the_reason_for_no_evaluation_names_what_the_folder_has():
    base = dict(num_images=300, native_size=64, colour=True, labelled=False, device="cpu")
    for num_classes, has in [(0, "no class sub-folders"), (1, "one class sub-folder")]:
        reasons = {c.field: c.reason for c in choose(DataFacts(**base, num_classes=num_classes))}
        assert reasons["num_evaluations"].startswith(f"{has}: ")


def test_every_choice_reason_is_one_line_and_every_field_exists():
    fields = {
        f
        for t in (GANDataArguments, GANModelArguments, GANTrainArguments, GANEvalArguments)
        for f in t.__dataclass_fields__
    }
    for facts in (dict(), dict(device="cuda"), dict(num_images=None, colour=None, native_size=None, labelled=False)):
        for choice in choose(
            DataFacts(
                **{
                    **dict(num_images=8000, native_size=64, colour=True, labelled=True, device="cpu", cache_dir="/c"),
                    **facts,
                }
            )
        ):
            assert choice.field in fields and choice.reason and "\n" not in choice.reason


def test_explicit_flags_win():
    configs = (
        GANDataArguments(dataset="folder", data_dir="x"),
        GANModelArguments(),
        GANTrainArguments(batch_size=16),
        GANEvalArguments(),
        RunArguments(output_dir="o"),
    )
    explicit = explicit_flags(["--batch_size", "16", "--output_dir=o", "--no_ada"], file_keys=["lr_g"])
    assert explicit >= {"batch_size", "output_dir", "ada", "lr_g"}
    (data, model, train, evaluation, run), lines = apply(
        configs, choose(DataFacts(8000, 64, True, True, "cpu")), explicit
    )
    assert train.batch_size == 16 and train.lr_g == 2e-4 and train.ada is False
    assert model.g_channels == 48 and data.channels == 3 and evaluation.num_evaluations == 10
    assert any(line.startswith("  --batch_size 16 (your flag") for line in lines)
    # A cadence given by the user wins over the preset's count of the same events.
    (_, _, train, evaluation, _), lines = apply(
        configs, choose(DataFacts(8000, 64, True, True, "cpu")), {"sample_every", "eval_every"}
    )
    assert train.num_grids == 0 and evaluation.num_evaluations == 0
    assert "  --num_grids 0 (your --sample_every wins; the preset would use 20)" in lines


def test_when_the_preset_applies():
    assert wanted(None, "folder", has_config=False) and wanted(None, "imagefolder", has_config=False)
    assert not wanted(None, "folder", has_config=True) and not wanted(None, "digits", has_config=False)
    assert wanted("auto", "digits", has_config=True) and not wanted("none", "folder", has_config=False)


def photo_folder(root, per_class=6):
    import numpy as np

    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        for i in range(per_class):
            write_png(root / name / f"{i}.png", rng.integers(0, 255, (40, 48, 3), dtype=np.uint8))
    return root


def test_folder_facts(tmp_path):
    facts = folder_facts(str(photo_folder(tmp_path / "d")), "cpu", None)
    assert (facts.num_images, facts.native_size, facts.colour, facts.labelled) == (12, 40, True, True)
    assert facts.num_classes == 2


def test_no_evaluation_when_the_classes_are_too_small_for_the_domain_features():
    # 48 images in 10 class folders (the README's example folder): the domain classifier would
    # refuse to serve and stop the run.
    small = {c.field: c.value for c in choose(DataFacts(48, 64, True, True, "cpu", num_classes=10))}
    assert small["num_evaluations"] == 0 and "eval_real_images" not in small
    enough = {c.field: c.value for c in choose(DataFacts(600, 64, True, True, "cpu", num_classes=10))}
    assert enough["num_evaluations"] == 10


def test_the_script_applies_it_to_a_folder_and_prints_why(tmp_path, capsys):
    data = photo_folder(tmp_path / "d")
    folder = ["--dataset", "folder", "--data_dir", str(data), "--output_dir", str(tmp_path / "o")]
    assert train_gan([*folder, "--g_channels", "8", "--dry_run"]) == 0
    out = capsys.readouterr().out
    assert "--preset auto (12 images, 40 px, colour, labelled, cpu, no --time_budget)" in out
    assert "  --channels 3: the first image is colour" in out and "  --g_channels 8 (your flag" in out
    assert '"g_channels": 8' in out and '"channels": 3' in out and '"ada": true' in out and '"preset": "auto"' in out
    assert train_gan([*folder, "--preset", "none", "--dry_run"]) == 0
    out = capsys.readouterr().out
    assert "--preset auto" not in out and '"channels": 1' in out


def test_a_bundled_dataset_gets_its_known_facts(tmp_path, capsys):
    # --preset auto with --dataset digits used to see "an unknown number of images, unlabelled":
    # 32 px for 8 px digits and no evaluation for a labelled set.
    from gan_accel.data.images import _load_digits
    from gan_accel.gan.preset import KNOWN_DATASETS

    images, labels = _load_digits()
    known = KNOWN_DATASETS["digits"]
    assert (len(images), images.shape[-1], int(labels.max()) + 1) == (
        known["num_images"],
        known["native_size"],
        known["num_classes"],
    )
    assert (
        train_gan(["--dataset", "digits", "--preset", "auto", "--output_dir", str(tmp_path / "o"), "--dry_run"]) == 0
    )
    out = capsys.readouterr().out
    assert "--preset auto (1797 images, 8 px, grey, labelled, cpu, no --time_budget)" in out
    assert "  --image_size 16: the images are 8 px" in out and "  --num_evaluations 10: " in out


def test_digits_read_from_the_shipped_file_equal_load_digits(monkeypatch):
    # The loader reads scikit-learn's digits.csv.gz itself (importing sklearn.datasets costs more
    # than a second of every run's start); it must give load_digits' pixels and labels, also when
    # the file is not where it looks (the fallback).
    import importlib.util

    from sklearn.datasets import load_digits

    from gan_accel.data.images import _load_digits

    digits = load_digits()
    want = torch.from_numpy(digits.images.astype("float32") * (255.0 / 16.0)).unsqueeze(1)
    for spec in (importlib.util.find_spec("sklearn"), None):
        monkeypatch.setattr(importlib.util, "find_spec", lambda name, spec=spec: spec)
        images, labels = _load_digits()
        assert torch.equal(images, want) and torch.equal(labels, torch.from_numpy(digits.target.astype("int64")))


def indistinct_folder(root, per_class=60):
    """Class sub-folders that cannot be told apart (by date, by camera): the same noise in each."""
    import numpy as np

    rng = np.random.default_rng(0)
    for name in ("2024-05", "2024-06"):
        for i in range(per_class):
            write_png(root / name / f"{i}.png", rng.integers(0, 255, (16, 16), dtype=np.uint8))
    return root


def test_evaluation_the_preset_chose_but_cannot_build_leaves_the_run_training(tmp_path, capsys):
    """Before: the default command stopped after the one-off classifier ("reaches only 0.5...
    use --feature_extractor inception", a flag train-gan does not have)."""
    data = indistinct_folder(tmp_path / "d")
    flags = ["--dataset", "folder", "--data_dir", str(data), "--max_steps", "2", "--g_channels", "4"]
    flags += ["--d_channels", "4", "--eval_num_images", "20", "--eval_cache_dir", str(tmp_path / "cache")]
    assert train_gan([*flags, "--output_dir", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "  --num_evaluations 10: evaluate (domain FID)" in out
    assert "warning: training without evaluation: the domain classifier for" in out
    assert "--eval_feature_extractor inception" in out and "--feature_extractor inception" not in out.replace(
        "--eval_f", ""
    )
    assert (tmp_path / "o" / "generator" / "model.safetensors").is_file()
    assert not (tmp_path / "o" / "best_generator").exists()
    # Asked for by the user, the same evaluation refuses, in train-gan's own flags.
    from run_fixtures import user_error

    line = user_error(train_gan, [*flags, "--output_dir", str(tmp_path / "asked"), "--num_evaluations", "2"], capsys)
    assert "held-out accuracy" in line and "--num_evaluations 0 --eval_every 0" in line
    assert "--eval_feature_extractor inception" in line and "--min_classifier_accuracy" not in line


def test_a_batch_never_larger_than_the_folder():
    for n in (1, 2, 3, 7):
        assert chosen(num_images=n)["batch_size"] == n
    assert chosen(num_images=8)["batch_size"] == 8 and chosen(num_images=100)["batch_size"] == 25
    # Each of 2 processes takes a full batch of its own.
    assert chosen(num_images=3, processes=2)["batch_size"] == 1
    assert chosen(num_images=20, processes=2)["batch_size"] == 8
    assert chosen(num_images=12, processes=2)["batch_size"] == 6


def colour_folder(root, count, start=0):
    import numpy as np

    rng = np.random.default_rng(start)
    for i in range(start, start + count):
        write_png(root / f"{i:03d}.png", rng.integers(0, 255, (16, 16, 3), dtype=np.uint8))
    return root


TINY_NETS = ["--g_channels", "4", "--d_channels", "4", "--num_grids", "0", "--num_sample_images", "4"]


def test_a_folder_of_one_to_three_images_trains(tmp_path, capsys):
    """Before: --dry_run passed, then the run stopped: "--batch_size 8 x 1 processes is larger
    than the dataset (3 images); lower --batch_size", a flag the user never gave."""
    for n in (1, 3):
        data = colour_folder(tmp_path / f"d{n}", n)
        argv = ["--dataset", "folder", "--data_dir", str(data), "--output_dir", str(tmp_path / f"o{n}")]
        assert train_gan([*argv, *TINY_NETS, "--max_steps", "2"]) == 0
        assert f"  --batch_size {n}: {n} image(s): every image in each batch" in capsys.readouterr().out
        assert (tmp_path / f"o{n}" / "generator" / "model.safetensors").is_file()


def test_resume_after_more_images_were_collected_keeps_the_batch_size(tmp_path, capsys):
    """The documented --allow_data_change case: 40 images (batch 10), then 60. Before: refused,
    the preset re-derived --batch_size 15 from the grown folder."""
    import json

    data = colour_folder(tmp_path / "d", 40)
    argv = ["--dataset", "folder", "--data_dir", str(data), "--output_dir", str(tmp_path / "o"), *TINY_NETS]
    assert train_gan([*argv, "--max_steps", "2", "--checkpointing_steps", "2"]) == 0
    colour_folder(data, 20, start=40)
    capsys.readouterr()
    assert train_gan([*argv, "--max_steps", "4", "--resume_from_checkpoint", "latest", "--allow_data_change"]) == 0
    out = capsys.readouterr().out
    assert "  --batch_size 10: kept from step_00000002, the checkpoint this run resumes" in out
    assert json.loads((tmp_path / "o" / "config.json").read_text())["batch_size"] == 10


def test_no_preset_on_colour_images_warns_that_the_run_is_grey(tmp_path, capsys):
    data = colour_folder(tmp_path / "d", 4)
    argv = ["--dataset", "folder", "--data_dir", str(data), "--output_dir", str(tmp_path / "o"), "--dry_run"]
    assert train_gan([*argv, "--preset", "none", "--batch_size", "2"]) == 0
    out = capsys.readouterr().out
    assert "holds colour images, but without the preset --channels is 1: the run trains on grey copies" in out
    assert train_gan([*argv, "--preset", "none", "--batch_size", "2", "--channels", "1"]) == 0
    assert "grey copies" not in capsys.readouterr().out  # asked for grey: no warning
