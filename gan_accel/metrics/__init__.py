"""Evaluation metrics: classification scores and, for GANs, FID/KID, class coverage and the real-data floor."""
from .classification import classification_metrics

__all__ = ["classification_metrics"]
