"""classification_metrics against sklearn's reference implementations."""

import pytest
import torch
from sklearn.metrics import accuracy_score, f1_score

from gan_accel.metrics import classification_metrics


def test_matches_sklearn_on_indices_and_logits():
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 4, (200,), generator=g)
    # Right 70% of the time, so accuracy and F1 are neither 0 nor 1.
    noise = torch.randint(0, 4, (200,), generator=g)
    preds = torch.where(torch.rand(200, generator=g) < 0.7, labels, noise)
    out = classification_metrics(preds, labels, num_classes=4)
    assert out["accuracy"] == pytest.approx(accuracy_score(labels, preds), abs=1e-6)
    assert out["f1_macro"] == pytest.approx(f1_score(labels, preds, average="macro"), abs=1e-6)
    logits = torch.nn.functional.one_hot(preds, 4).float() * 3.0 - 1.0
    assert classification_metrics(logits, labels, num_classes=4) == out


def test_hand_made_case():
    labels = torch.tensor([0, 0, 1, 1])
    preds = torch.tensor([0, 1, 1, 1])
    out = classification_metrics(preds, labels, num_classes=2)
    assert out["accuracy"] == pytest.approx(0.75)
    # class 0: P=1, R=0.5, F1=2/3; class 1: P=2/3, R=1, F1=0.8
    assert out["f1_macro"] == pytest.approx((2 / 3 + 0.8) / 2, abs=1e-6)


def test_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        classification_metrics(torch.tensor([0, 1]), torch.tensor([0]), num_classes=2)
