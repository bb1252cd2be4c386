"""Class coverage of generated images, judged by the domain classifier's predictions.

Definitions (stated here because every paper picks its own):
- histogram:  share of generated images predicted as each class (sums to 1).
- covered:    a class counts as covered when its predicted share is at least
              ``min_share_ratio`` (default 0.1) times its share in the real labels, i.e. for a
              balanced 10-class set at least 1% of the samples. The ratio (not an absolute share)
              keeps the rule meaningful for many classes and for imbalanced data, and sits well
              above the ~0.3%/class that a 97%-accurate classifier misassigns on a collapsed generator.
- kl:         KL(real || generated) = sum_c p_real(c) * log(p_real(c) / p_gen(c)), natural log.
              This direction punishes missing classes (mode dropping) hardest; p_gen is smoothed
              by adding ``eps`` (1e-6) to every class share and renormalising, so a missing class
              contributes a large but finite term (about p_real(c) * 13.8).
- conditional accuracy (conditional generators): share of images whose predicted class equals
  the class they were generated for.
"""

from __future__ import annotations

from typing import Dict, List

import torch

COVERAGE_MIN_SHARE_RATIO = 0.1
KL_EPS = 1e-6


def class_histogram(preds: torch.Tensor, num_classes: int) -> torch.Tensor:
    """float64 ``[num_classes]`` shares of ``preds`` (int class indices)."""
    counts = torch.bincount(preds.long().cpu(), minlength=num_classes).double()
    return counts / counts.sum().clamp_min(1.0)


def class_coverage(
    preds: torch.Tensor,
    real_labels: torch.Tensor,
    num_classes: int,
    min_share_ratio: float = COVERAGE_MIN_SHARE_RATIO,
    eps: float = KL_EPS,
) -> Dict[str, object]:
    """Coverage figures of generated images' predicted classes against the real label distribution.

    Returns ``{"histogram": list of floats, "classes_covered": int, "num_classes": int, "kl": float}``.
    """
    if preds.numel() == 0:
        raise ValueError("class_coverage needs at least one prediction")
    p_gen = class_histogram(preds, num_classes)
    p_real = class_histogram(real_labels, num_classes)
    covered = int(((p_gen >= min_share_ratio * p_real) & (p_real > 0)).sum())
    q = (p_gen + eps) / (p_gen + eps).sum()
    present = p_real > 0  # 0 * log(0 / q) = 0 by convention
    kl = float((p_real[present] * (p_real[present] / q[present]).log()).sum())
    histogram: List[float] = p_gen.tolist()
    return {"histogram": histogram, "classes_covered": covered, "num_classes": num_classes, "kl": kl}


def conditional_accuracy(preds: torch.Tensor, conditioned_on: torch.Tensor) -> float:
    """Share of generated images classified as the class they were generated for."""
    return float((preds.cpu() == conditioned_on.cpu()).double().mean())
