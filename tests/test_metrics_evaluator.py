"""GANEvaluator end to end on digits: the domain classifier, its cache, coverage, the floor, the
Inception error path and scripts/evaluate_gan.py."""

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import gan_accel.metrics.domain as domain
from gan_accel.data import load_image_data, to_float_images
from gan_accel.errors import UserError
from gan_accel.metrics import GANEvaluator

NUM_IMAGES = 300


@pytest.fixture(scope="module")
def digits():
    return load_image_data("digits", image_size=32, channels=1)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("eval_cache")


@pytest.fixture(scope="module")
def evaluator(digits, cache):
    # Default classifier settings: the accuracy asserted below is the one the library states.
    return GANEvaluator(digits, num_images=NUM_IMAGES, cache_dir=str(cache), seed=0)


class RealImagesG(nn.Module):
    """A 'generator' that returns real digits (of one class if ``only_class`` is set)."""

    z_dim, num_classes = 4, 0

    def __init__(self, data, only_class=None):
        super().__init__()
        keep = torch.arange(len(data)) if only_class is None else (data.labels == only_class).nonzero().flatten()
        self.images = to_float_images(data.images[keep])

    def forward(self, z, labels=None):
        idx = (z[:, 0].abs() * 1e4).long() % len(self.images)
        return self.images[idx]


class ConditionalRealG(nn.Module):
    """Conditional 'generator': a real image of the requested class."""

    z_dim, num_classes = 4, 10

    def __init__(self, data):
        super().__init__()
        self.by_class = [to_float_images(data.images[data.labels == c]) for c in range(10)]

    def forward(self, z, labels=None):
        return torch.stack([self.by_class[int(c)][i % len(self.by_class[int(c)])] for i, c in enumerate(labels)])


class NoiseG(nn.Module):
    z_dim, num_classes = 4, 0

    def forward(self, z, labels=None):
        return torch.rand(z.shape[0], 1, 32, 32) * 2 - 1


def test_domain_classifier_reaches_its_stated_accuracy(evaluator):
    assert evaluator.domain.accuracy >= 0.9
    assert list((evaluator.cache_dir / "domain").glob("digits-32px-1ch-*.pt"))


def test_real_images_score_near_the_floor_and_noise_far_above(evaluator, digits):
    real_like = evaluator.evaluate(RealImagesG(digits))
    noise = evaluator.evaluate(NoiseG())
    assert real_like["eval/fid"] < 3 * real_like["eval/fid_floor"] + 1.0
    assert noise["eval/fid"] > 50 * real_like["eval/fid"]
    assert noise["eval/kid_mean"] > 50 * max(real_like["eval/kid_mean"], 1e-4)
    assert real_like["eval/classes_covered"] == 10 and real_like["eval/coverage_kl"] < 0.05
    # The SWD, without learned features: real digits near its floor, noise far above; real digits are
    # as good as real by every floored metric (saturated), noise by none.
    assert (
        noise["eval/swd"] > 20 * real_like["eval/swd_floor"]
        and real_like["eval/swd"] < 2 * real_like["eval/swd_floor"]
    )
    assert [real_like[f"eval/{m}_saturated"] for m in ("fid", "kid", "swd")] == [1.0, 1.0, 1.0]
    assert [noise[f"eval/{m}_saturated"] for m in ("fid", "kid", "swd")] == [0.0, 0.0, 0.0]
    assert real_like["eval/num_generated"] == NUM_IMAGES
    assert 2 <= real_like["eval/num_floor"] <= NUM_IMAGES
    expected = {
        "eval/fid",
        "eval/kid_mean",
        "eval/kid_std",
        "eval/fid_floor",
        "eval/kid_floor_mean",
        "eval/classes_covered",
        "eval/coverage_kl",
        "eval/classifier_accuracy",
        "eval/precision",
        "eval/recall",
        "eval/density",
        "eval/coverage",
        "eval/fid_ci_low",
        "eval/fid_ci_high",
        "eval/precision_ci_low",
        "eval/recall_ci_high",
        "eval/protocol_id",
    }
    assert expected <= set(real_like) and all(isinstance(v, float) for v in real_like.values())
    # Fidelity and diversity, in the same domain features: real digits are inside the real
    # manifold and cover it; uniform noise is nowhere near it.
    assert real_like["eval/precision"] > 0.8 and real_like["eval/recall"] > 0.8 and real_like["eval/coverage"] > 0.9
    assert noise["eval/precision"] < 0.05 and noise["eval/density"] < 0.05
    from gan_accel.metrics.bootstrap import METRIC_RANGES

    for result in (real_like, noise):  # each reported value inside its interval, inside its range
        for name, (bottom, top) in METRIC_RANGES.items():
            value = result["eval/kid_mean" if name == "kid" else f"eval/{name}"]
            low, high = result[f"eval/{name}_ci_low"], result[f"eval/{name}_ci_high"]
            assert bottom <= low <= value <= high <= top, (name, low, value, high)


class SequenceG(nn.Module):
    """A 'generator' that returns fixed images in order, the first again once all were returned."""

    z_dim, num_classes = 4, 0

    def __init__(self, images):
        super().__init__()
        self.images, self.at = images, 0

    def forward(self, z, labels=None):
        rows = (torch.arange(z.shape[0]) + self.at) % len(self.images)
        self.at = int(rows[-1]) + 1
        return self.images[rows]


def test_saturation_is_judged_at_the_floor_size_and_a_colour_shift_separates(evaluator, digits):
    # The floor's own held-out images scored as a generator: at the floor's size each metric is the
    # floor itself (the same estimator on the same images), inside its real-vs-real interval.
    heldout = to_float_images(digits.images[evaluator.heldout_idx[:NUM_IMAGES]])
    real = evaluator.evaluate(SequenceG(heldout))
    for name, value, floor in (
        ("fid", "fid_at_floor_size", "fid_floor"),
        ("kid", "kid_at_floor_size_mean", "kid_floor_mean"),
        ("swd", "swd", "swd_floor"),
    ):
        assert real[f"eval/{value}"] == pytest.approx(real[f"eval/{floor}"], rel=1e-6, abs=1e-9)
        assert real[f"eval/{name}_floor_ci_low"] <= real[f"eval/{floor}"] <= real[f"eval/{name}_floor_ci_high"]
        assert real[f"eval/{name}_saturated"] == 1.0
    # The same digits a little lighter (a faint colour cast): no longer as good as real on FID or SWD
    # at the floor's size, though the full-size FID (against the whole reference) lies inside the
    # interval from its larger sample alone: judged by that, as before, it read saturated.
    shifted = evaluator.evaluate(SequenceG((heldout + 0.05).clamp(-1, 1)))
    assert shifted["eval/fid_saturated"] == 0.0 and shifted["eval/swd_saturated"] == 0.0
    assert shifted["eval/fid"] <= shifted["eval/fid_floor_ci_high"] < shifted["eval/fid_at_floor_size"]


def test_every_result_carries_its_protocol(evaluator, digits):
    from gan_accel.metrics.protocol import MUST_MATCH, protocol_id

    result = evaluator.evaluate_full(RealImagesG(digits))
    protocol = result.protocol
    assert set(MUST_MATCH) | {"seed", "bootstrap"} <= set(protocol)
    assert protocol["feature_extractor"] == "domain" and len(protocol["feature_weights_sha256"]) == 64
    assert protocol["num_fake"] == NUM_IMAGES and protocol["num_real"] == evaluator.distance.num_real
    assert protocol["real_split_size"] == len(digits) - len(evaluator.heldout_idx)
    assert protocol["bootstrap"]["resamples"] == 20 and protocol["seed"] == 0
    hex_id = protocol_id(protocol)
    assert result.flat()["eval/protocol_id"] == int(hex_id, 16)
    assert json.loads((evaluator.cache_dir / "protocol" / f"{hex_id}.json").read_text()) == protocol


class NanG(nn.Module):
    """A diverged generator: one NaN image per batch."""

    z_dim, num_classes = 4, 0

    def forward(self, z, labels=None):
        x = torch.rand(z.shape[0], 1, 32, 32) * 2 - 1
        x[0] = float("nan")
        return x


def test_a_diverged_generator_scores_nan_instead_of_crashing(evaluator):
    # Before: LAPACK's eigenvalue solver segfaulted on the NaN features, killing the training run.
    out = evaluator.evaluate(NanG())
    assert math.isnan(out["eval/fid"]) and math.isnan(out["eval/kid_mean"]) and math.isnan(out["eval/precision"])
    assert "eval/fid_ci_low" not in out and out["eval/num_generated"] == NUM_IMAGES


def test_collapsed_generator_covers_one_class(evaluator, digits):
    # Zeros: the class the classifier confuses least, so misclassified samples stay under the
    # coverage threshold (1% here) and only the class itself counts.
    full = evaluator.evaluate_full(RealImagesG(digits, only_class=0))
    assert full.class_histogram[0] > 0.95
    out = full.flat()
    assert out["eval/classes_covered"] == 1
    assert out["eval/coverage_kl"] > 1.0
    # Every sample looks like a real zero (precision kept) but nine classes are missed.
    assert out["eval/precision"] > 0.8 and out["eval/recall"] < 0.3 and out["eval/coverage"] < 0.3


def test_conditional_generator_accuracy(evaluator, digits):
    out = evaluator.evaluate_full(ConditionalRealG(digits))
    assert out.conditional_accuracy is not None and out.conditional_accuracy > 0.9


def test_evaluate_is_repeatable_and_leaves_rng_and_mode_alone(evaluator):
    G = NoiseG().train()
    torch.manual_seed(1)
    state = torch.get_rng_state()
    first = evaluator.evaluate(G)
    assert torch.equal(torch.get_rng_state(), state)
    assert G.training
    assert evaluator.evaluate(G) == first


def test_second_construction_uses_the_cache(evaluator, digits, cache, monkeypatch, tmp_path):
    def no_training(*args, **kwargs):
        raise AssertionError("the domain classifier was retrained despite the cache")

    monkeypatch.setattr(domain, "train_domain_classifier", no_training)
    again = GANEvaluator(digits, num_images=NUM_IMAGES, cache_dir=str(cache), seed=0)
    assert again.domain.accuracy == evaluator.domain.accuracy
    assert again.floor == evaluator.floor
    # The patch point is the one used: an empty cache does call it.
    with pytest.raises(AssertionError, match="retrained"):
        GANEvaluator(digits, num_images=NUM_IMAGES, cache_dir=str(tmp_path), seed=0)


def test_a_reference_smaller_than_the_features_is_warned_about(digits, cache, evaluator, caplog):
    assert evaluator.distance.num_real > evaluator.features.num_features  # the default: no warning
    with caplog.at_level("WARNING", logger="gan_accel.metrics.evaluator"):
        GANEvaluator(digits, num_images=NUM_IMAGES, cache_dir=str(cache), max_reference_images=50)
    assert [r.getMessage() for r in caplog.records if "mostly noise" in r.getMessage()] == [
        f"warning: the real reference is 50 images, no more than the {evaluator.features.num_features} feature "
        "dimensions: FID and KID from it are mostly noise; evaluate against a few hundred images or more"
    ]


def test_refuses_a_classifier_below_the_threshold(digits, cache, evaluator):
    with pytest.raises(UserError, match="held-out accuracy"):
        GANEvaluator(digits, num_images=NUM_IMAGES, cache_dir=str(cache), min_classifier_accuracy=0.9999)


def test_domain_needs_labels(digits, tmp_path):
    unlabelled = type(digits)(digits.images, None, [], name="unlabelled")
    with pytest.raises(UserError, match="labelled"):
        GANEvaluator(unlabelled, cache_dir=str(tmp_path))


@pytest.mark.skipif(importlib.util.find_spec("torch_fidelity") is not None, reason="checks the missing-package path")
def test_inception_without_weights_is_a_clear_user_error(digits, tmp_path, monkeypatch):
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    with pytest.raises(UserError, match="--inception_weights") as err:
        GANEvaluator(digits, feature_extractor="inception", cache_dir=str(tmp_path))
    assert "\n" not in str(err.value) and "gan_accel[inception]" in str(err.value)
    with pytest.raises(UserError, match="file not found"):
        GANEvaluator(
            digits, feature_extractor="inception", cache_dir=str(tmp_path), inception_weights=str(tmp_path / "x.pth")
        )


def _load_script():
    spec = importlib.util.spec_from_file_location(
        "evaluate_gan", Path(__file__).parents[1] / "scripts" / "evaluate_gan.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up in sys.modules
    spec.loader.exec_module(module)
    return module


def test_evaluate_gan_script_end_to_end(tmp_path, cache, evaluator, capsys):
    from gan_accel.models import build_models, save_generator

    G, _ = build_models("dcgan", z_dim=16, channels=1, image_size=32, g_channels=8, d_channels=8, d_norm="batch")
    save_generator(G, tmp_path / "generator")
    script = _load_script()
    rc = script.main(
        [
            "--generator",
            str(tmp_path / "generator"),
            "--dataset",
            "digits",
            "--num_images",
            str(NUM_IMAGES),
            "--cache_dir",
            str(cache),
            "--output_dir",
            str(tmp_path / "eval"),
            "--nearest",
            "--nearest_rows",
            "5",
            "--bootstrap",
            "10",
        ]
    )
    assert rc == 0
    results = json.loads((tmp_path / "eval" / "eval_results.json").read_text())
    for key in (
        "fid",
        "kid_mean",
        "kid_std",
        "fid_floor",
        "kid_floor_mean",
        "kid_floor_std",
        "num_generated",
        "num_reference",
        "num_floor",
        "classifier_accuracy",
        "classes_covered",
        "coverage_kl",
        "class_histogram",
        "precision",
        "recall",
        "density",
        "coverage",
        "intervals",
        "protocol",
        "memorisation",
    ):
        assert key in results, key
    assert results["num_generated"] == NUM_IMAGES and results["fid"] > results["fid_floor"]
    assert results["config"]["feature_extractor"] == "domain"
    assert results["protocol"]["num_fake"] == NUM_IMAGES and results["protocol"]["bootstrap"]["resamples"] == 10
    assert set(results["intervals"]) == {"fid", "kid", "precision", "recall", "density", "coverage", "swd"}
    # The panel: FID, KID and SWD, each with its floor, its real-vs-real interval and a saturated flag.
    assert results["swd"] > results["swd_floor"] > 0 and set(results["swd_levels"]) == {"32", "16"}
    assert set(results["floor_intervals"]) == {"fid", "kid", "swd"} and results["saturated"] == []
    low, high = results["floor_intervals"]["swd"]
    assert low <= results["swd_floor"] <= high < results["swd"]
    # An untrained generator makes blobs: nothing like a copy of a training digit.
    assert results["memorisation"]["copying"] is False
    from PIL import Image

    assert Image.open(tmp_path / "eval" / "nearest.png").size[1] == 5 * 34 + 2  # 5 rows of 32 px + padding
    out = capsys.readouterr().out
    assert "FID" in out and "precision" in out and "copy rate" in out
    panel = [line.split() for line in out.splitlines() if line.startswith("  ") and "floor" in line]
    assert [(row[0], row[4], row[-1]) for row in panel] == [(m, "floor", "separates") for m in ("FID", "KID", "SWD")]


def test_evaluate_gan_script_errors_are_one_line(tmp_path, capsys):
    script = _load_script()
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--generator", str(tmp_path), "--num_images", "1"])
    assert exit_info.value.code == 2
    assert "--num_images" in capsys.readouterr().err
