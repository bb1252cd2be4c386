"""Evaluation metrics: classification scores and, for GANs, FID/KID (torchmetrics, pluggable
feature extractor), class coverage and the real-data floor."""
from .classification import classification_metrics
from .coverage import class_coverage, class_histogram, conditional_accuracy
from .distance import FeatureDistance
from .domain import DomainClassifier, DomainFeatures, DomainTrainSettings, load_or_train_domain_model
from .evaluator import FEATURE_EXTRACTORS, EvalResult, GANEvaluator, format_result
from .inception import InceptionFeatures, find_inception_weights

__all__ = [
    "DomainClassifier", "DomainFeatures", "DomainTrainSettings", "EvalResult", "FEATURE_EXTRACTORS", "FeatureDistance",
    "GANEvaluator", "InceptionFeatures", "class_coverage", "class_histogram", "classification_metrics",
    "conditional_accuracy", "find_inception_weights", "format_result", "load_or_train_domain_model",
]
