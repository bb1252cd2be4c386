"""Class coverage and conditional accuracy on hand-made predictions."""

import math

import pytest
import torch

from gan_accel.metrics.coverage import KL_EPS, class_coverage, class_histogram, conditional_accuracy

BALANCED = torch.arange(4).repeat(25)  # 4 classes, 25% each


def test_perfect_generator_covers_everything_with_zero_kl():
    out = class_coverage(BALANCED.clone(), BALANCED, num_classes=4)
    assert out["classes_covered"] == 4
    assert out["kl"] == pytest.approx(0.0, abs=1e-9)
    assert out["histogram"] == [0.25] * 4


def test_collapsed_generator():
    preds = torch.zeros(100, dtype=torch.long)
    out = class_coverage(preds, BALANCED, num_classes=4)
    assert out["classes_covered"] == 1
    # KL(real || gen) with eps-smoothing: class 0 gets (1+eps)/(1+4eps), the others eps/(1+4eps).
    q0, qe = (1 + KL_EPS) / (1 + 4 * KL_EPS), KL_EPS / (1 + 4 * KL_EPS)
    expected = 0.25 * math.log(0.25 / q0) + 3 * 0.25 * math.log(0.25 / qe)
    assert out["kl"] == pytest.approx(expected, rel=1e-9)


def test_coverage_threshold_is_relative_to_the_real_share():
    # Class 3 gets 2% of samples: covered at ratio 0.05 (needs 1.25%), not at 0.1 (needs 2.5%).
    preds = torch.tensor([0] * 33 + [1] * 33 + [2] * 32 + [3] * 2)
    assert class_coverage(preds, BALANCED, 4, min_share_ratio=0.1)["classes_covered"] == 3
    assert class_coverage(preds, BALANCED, 4, min_share_ratio=0.05)["classes_covered"] == 4


def test_histogram_and_conditional_accuracy():
    assert class_histogram(torch.tensor([1, 1, 2, 0]), 3).tolist() == [0.25, 0.5, 0.25]
    assert conditional_accuracy(torch.tensor([0, 1, 2, 2]), torch.tensor([0, 1, 1, 2])) == 0.75
