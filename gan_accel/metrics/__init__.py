"""Evaluation metrics: classification scores and, for GANs, FID/KID (torchmetrics, pluggable
feature extractor), the sliced Wasserstein distance (no learned features), precision/recall and
density/coverage, class coverage, the real-data floor, the memorisation check, and the protocol
every number is written with."""

import importlib
from typing import Any

# name -> submodule. Loaded on first use (PEP 562): torchmetrics pulls in scipy, transformers and
# torchvision (~4 s on a 2-core CPU), and `compare-metrics`, `--help` and every error exit before
# an evaluation should not wait for them.
_EXPORTS = {
    "classification_metrics": "classification",
    "class_coverage": "coverage",
    "class_histogram": "coverage",
    "conditional_accuracy": "coverage",
    "FeatureDistance": "distance",
    "DomainClassifier": "domain",
    "DomainFeatures": "domain",
    "DomainTrainSettings": "domain",
    "load_or_train_domain_model": "domain",
    "FEATURE_EXTRACTORS": "evaluator",
    "EvalResult": "result",
    "GANEvaluator": "evaluator",
    "format_result": "result",
    "fidelity_diversity": "fidelity",
    "InceptionFeatures": "inception",
    "find_inception_weights": "inception",
    "check_memorisation": "memorisation",
    "compare_protocols": "protocol",
    "format_metrics": "protocol",
    "metric_protocol": "protocol",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = sorted(_EXPORTS, key=str.lower)
