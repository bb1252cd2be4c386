"""Accuracy and macro F1 for a classifier's predictions, computed by torchmetrics."""

from __future__ import annotations

from typing import Dict

import torch


def classification_metrics(preds: torch.Tensor, labels: torch.Tensor, num_classes: int) -> Dict[str, float]:
    """``{"accuracy": ..., "f1_macro": ...}`` for a multiclass problem.

    preds:       int class indices ``[N]`` or logits/probabilities ``[N, num_classes]`` (argmax taken).
    labels:      int64 ``[N]``, the true classes in ``0..num_classes-1``.
    num_classes: number of classes (>= 2).

    Accuracy is micro-averaged (the share of correct predictions). Macro F1 averages the per-class
    F1 with equal weight; torchmetrics leaves out of that average the classes that appear neither
    in ``labels`` nor in ``preds`` (their F1 is 0/0), so a small evaluation set that misses a class
    is not penalised for it.
    """
    if preds.ndim == 2:
        preds = preds.argmax(dim=1)
    if preds.shape != labels.shape:
        raise ValueError(f"preds {tuple(preds.shape)} and labels {tuple(labels.shape)} must have the same length")
    if labels.numel() == 0:
        raise ValueError("classification_metrics needs at least one example")
    # torchmetrics is imported here, not at the top: importing it costs seconds (see gan_accel.metrics).
    from torchmetrics.functional.classification import multiclass_accuracy, multiclass_f1_score

    preds, labels = preds.long().cpu(), labels.long().cpu()
    accuracy = multiclass_accuracy(preds, labels, num_classes=num_classes, average="micro")
    f1_macro = multiclass_f1_score(preds, labels, num_classes=num_classes, average="macro")
    return {"accuracy": float(accuracy), "f1_macro": float(f1_macro)}
