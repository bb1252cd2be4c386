"""Fine-tuning sequence classifiers (DistilBERT-style) on the shared loop utilities."""

from .config import ClassifierDataArguments, ClassifierModelArguments, ClassifierTrainArguments

CLASSIFIER_CONFIG_TYPES = (ClassifierDataArguments, ClassifierModelArguments, ClassifierTrainArguments)

__all__ = [
    "CLASSIFIER_CONFIG_TYPES",
    "ClassifierDataArguments",
    "ClassifierModelArguments",
    "ClassifierTrainArguments",
]
