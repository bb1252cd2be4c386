"""Evaluation metrics: classification scores and, for GANs, FID/KID (torchmetrics, pluggable
feature extractor), precision/recall and density/coverage, class coverage, the real-data floor,
the memorisation check, and the protocol every number is written with."""

from .classification import classification_metrics
from .coverage import class_coverage, class_histogram, conditional_accuracy
from .distance import FeatureDistance
from .domain import DomainClassifier, DomainFeatures, DomainTrainSettings, load_or_train_domain_model
from .evaluator import FEATURE_EXTRACTORS, EvalResult, GANEvaluator, format_result
from .fidelity import fidelity_diversity
from .inception import InceptionFeatures, find_inception_weights
from .memorisation import check_memorisation
from .protocol import compare_protocols, format_metrics, metric_protocol

__all__ = [
    "DomainClassifier",
    "DomainFeatures",
    "DomainTrainSettings",
    "EvalResult",
    "FEATURE_EXTRACTORS",
    "FeatureDistance",
    "GANEvaluator",
    "InceptionFeatures",
    "check_memorisation",
    "class_coverage",
    "class_histogram",
    "classification_metrics",
    "compare_protocols",
    "conditional_accuracy",
    "fidelity_diversity",
    "find_inception_weights",
    "format_metrics",
    "format_result",
    "load_or_train_domain_model",
    "metric_protocol",
]
