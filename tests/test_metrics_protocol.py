"""The metric protocol: weights hash, comparability, formatting, and scripts/compare_metrics.py."""

import json

import pytest
import torch

from gan_accel.metrics.domain import DomainClassifier
from gan_accel.metrics.protocol import compare_protocols, format_metrics, metric_protocol, protocol_id, weights_sha256
from helpers import load_script, one_line_error
from run_fixtures import snapshot

COMPARE = load_script("compare_metrics").main


def protocol(**changes):
    settings = dict(
        feature_extractor="domain",
        feature_weights_sha256="ab" * 32,
        image_size=32,
        channels=1,
        dataset="digits",
        data_sha256="cd" * 32,
        real_split="train: 1438 of 1797 images, split seed 0",
        real_split_size=1438,
        num_real=1438,
        num_fake=1000,
        seed=0,
        k_precision_recall=3,
        k_density_coverage=5,
        kid_subset_size=500,
        bootstrap_resamples=20,
        bootstrap_level=0.95,
    )
    settings.update(changes)
    return metric_protocol(**settings)


def result(**changes):
    return {
        "fid": 1.5,
        "kid_mean": 0.01,
        "precision": 0.8,
        "recall": 0.7,
        "density": 0.9,
        "coverage": 0.85,
        "intervals": {"fid": [1.2, 1.9], "kid": [0.005, 0.02], "precision": [0.78, 0.83]},
        "protocol": protocol(**changes),
    }


def test_weights_hash_follows_the_weights():
    torch.manual_seed(0)
    net = DomainClassifier(1, 10)
    same = DomainClassifier(1, 10)
    same.load_state_dict(net.state_dict())
    assert weights_sha256(net) == weights_sha256(same) and len(weights_sha256(net)) == 64
    with torch.no_grad():
        same.head.bias[3] += 1e-6
    assert weights_sha256(net) != weights_sha256(same)


def test_what_makes_results_incomparable():
    assert compare_protocols(protocol(), protocol()) == (True, [], [])
    comparable, reasons, notes = compare_protocols(protocol(), protocol(num_fake=50000, feature_extractor="inception"))
    assert not comparable and notes == []
    # resize follows the extractor
    assert [r.split(":")[0] for r in reasons] == ["feature_extractor", "resize", "num_fake"]
    assert "1000 vs 50000" in reasons[-1]
    comparable, reasons, notes = compare_protocols(protocol(), protocol(seed=1, bootstrap_resamples=50))
    assert comparable and reasons == [] and [n.split(":")[0] for n in notes] == ["seed", "bootstrap"]
    assert protocol_id(protocol()) == protocol_id(protocol(seed=1)) != protocol_id(protocol(image_size=64))


def test_format_metrics_for_a_model_card():
    text = format_metrics(result())
    assert "| fid | 1.5 | [1.2, 1.9] |" in text and "| kid_mean | 0.01 | [0.005, 0.02] |" in text
    assert "| recall | 0.7 | - |" in text and "95% interval" in text
    assert f"protocol {protocol_id(protocol())}" in text and "- num_fake: 1000" in text
    plain = format_metrics(result(), markdown=False)
    assert "fid: 1.5 95% interval [1.2, 1.9]" in plain and "|" not in plain


def test_model_index_metrics_for_the_card_metadata():
    from gan_accel.metrics.protocol import model_index_metrics

    entries = model_index_metrics(result())
    assert [e["type"] for e in entries] == ["fid", "kid_mean", "precision", "recall", "density", "coverage"]
    fid = entries[0]
    assert fid["value"] == 1.5 and fid["name"].startswith("FID (domain features, 1000 generated vs 1438 real")
    assert protocol_id(protocol()) in fid["name"] and "95% interval [1.2, 1.9]" in fid["name"]
    assert model_index_metrics({"fid": 2.0}) == [{"type": "fid", "value": 2.0, "name": "FID"}]


def write(path, data):
    path.write_text(json.dumps(data))
    return str(path)


def test_compare_metrics_script(tmp_path, capsys):
    a = write(tmp_path / "a.json", result())
    b = write(tmp_path / "b.json", result(seed=3))
    c = write(tmp_path / "c.json", result(num_real=10000, dataset="mnist"))
    assert COMPARE([a, b]) == 0
    out = capsys.readouterr().out
    assert out.startswith("comparable") and "fid: 1.5" in out and "note" in out and "seed: 0 vs 3" in out
    assert COMPARE([a, c]) == 1
    out = capsys.readouterr().out
    assert out.startswith("NOT comparable: 2 protocol field(s) differ")
    assert "dataset: 'digits' vs 'mnist'" in out and "num_real: 1438 vs 10000" in out
    # A protocol file (CACHE_DIR/protocol/<id>.json from a training run) compares too.
    assert COMPARE([a, write(tmp_path / "p.json", protocol())]) == 0


def not_json(path):
    path.write_text("{oops")
    return str(path)


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda tmp: str(tmp), "a folder; pass an eval_results.json"),
        (lambda tmp: str(tmp / "nope.json"), "nope.json: not found"),
        (lambda tmp: not_json(tmp / "bad.json"), "bad.json: not a JSON file"),
        (lambda tmp: write(tmp / "old.json", {"fid": 3.0}), "no metric protocol in it"),
        # Found by hand: a value that is not a number was a traceback while printing the table.
        (lambda tmp: write(tmp / "abc.json", {**result(), "fid": "abc"}), "abc.json: fid is 'abc', not a number"),
        (lambda tmp: write(tmp / "t.json", {**result(), "precision": True}), "t.json: precision is True, not a"),
        (
            lambda tmp: write(tmp / "iv.json", {**result(), "intervals": {"fid": [1.0]}}),
            "iv.json: intervals.fid is [1.0], not [low, high]",
        ),
    ],
)
def test_compare_metrics_bad_input(tmp_path, capsys, make, match):
    good = write(tmp_path / "good.json", result())
    bad = make(tmp_path)
    before = snapshot(tmp_path)
    line = one_line_error(COMPARE, [good, bad], capsys)
    assert match in line, line
    assert snapshot(tmp_path) == before
