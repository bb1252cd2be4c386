"""Translation evaluation: FID against the target domain beside the real-data floor and the
untranslated images, class preservation, and eval_results.json written by a training run."""

import json

import pytest
import torch

import gan_accel.cyclegan.evaluate as evaluate
from cyclegan_fixtures import TINY_CYCLEGAN
from gan_accel.cyclegan.digits_pair import digits_pair, thick_strokes
from gan_accel.cyclegan.evaluate import TranslationEvaluator
from gan_accel.metrics import DomainTrainSettings
from helpers import load_script

train_cyclegan = load_script("train_cyclegan").main


@pytest.fixture(autouse=True)
def quick_classifier(monkeypatch):
    # 3 passes instead of 12: enough to separate the 16 px digits well for these checks.
    monkeypatch.setattr(evaluate, "CLASSIFIER", DomainTrainSettings(epochs=3))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cyclegan_eval_cache")


class Oracle(torch.nn.Module):
    """The true A -> B mapping of the digits pair."""

    def forward(self, x):
        u8 = ((x + 1) * 127.5).round().clamp(0, 255).to(torch.uint8)
        return thick_strokes(u8).float() / 127.5 - 1


def test_oracle_and_identity_translators(cache_dir):
    a, b = digits_pair(16, 1)
    ev = TranslationEvaluator(a, b, num_images=300, cache_dir=str(cache_dir), min_classifier_accuracy=0.8)
    identity = ev.evaluate(torch.nn.Identity())
    oracle = ev.evaluate(Oracle())
    assert identity.fid == pytest.approx(identity.fid_untranslated)  # doing nothing scores "untranslated"
    assert oracle.fid < identity.fid / 5 and oracle.fid_at_floor_size < 3 * oracle.fid_floor
    assert oracle.class_preservation > 0.85 and identity.class_preservation < oracle.class_preservation - 0.1
    assert oracle.num_floor == min(300, round(len(b) * 0.2)) and oracle.classifier_accuracy > 0.8
    # Every FID carries its interval and protocol; the two translators were measured alike.
    assert oracle.fid_interval[0] <= oracle.fid <= oracle.fid_interval[1]
    assert oracle.protocol == identity.protocol and oracle.protocol["num_fake"] == 300
    assert oracle.protocol["dataset"] == b.name and oracle.protocol["real_split_size"] == len(b) - oracle.num_floor


def test_training_run_writes_eval_results(tmp_path, cache_dir, monkeypatch):
    # The trainer evaluates with the default accuracy bar (0.9): the 3-pass classifier clears it at 16 px.
    out = tmp_path / "run"
    assert (
        train_cyclegan(
            [
                *[f for f in TINY_CYCLEGAN if f != "--no_evaluate"],
                "--output_dir",
                str(out),
                "--max_steps",
                "2",
                "--eval_num_images",
                "100",
                "--eval_every",
                "1",
                "--eval_cache_dir",
                str(cache_dir),
            ]
        )
        == 0
    )
    results = json.loads((out / "eval_results.json").read_text())
    assert results["step"] == 2
    for direction in ("A2B", "B2A"):
        r = results[direction]
        assert r["num_translated"] == 100 and 0 <= r["class_preservation"] <= 1
        assert r["fid_floor"] > 0 and r["fid_untranslated"] > r["fid_floor"]
        assert r["protocol"]["num_fake"] == 100 and len(r["fid_interval"]) == 2
    logged = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert any("eval/A2B/class_preservation" in r and "eval/A2B/fid_ci_high" in r for r in logged)
