"""Typed configuration of the GAN path (one dataclass per concern, one module each: ``data``,
``model``, ``train``, ``evaluation``); everything is importable from here."""

from .data import IN_MEMORY, GANDataArguments
from .evaluation import EVAL_FEATURES, GANEvalArguments
from .model import GANModelArguments
from .train import PRESETS, SCHEDULERS, GANTrainArguments

GAN_CONFIG_TYPES = (GANDataArguments, GANModelArguments, GANTrainArguments, GANEvalArguments)

__all__ = [
    "EVAL_FEATURES",
    "GAN_CONFIG_TYPES",
    "IN_MEMORY",
    "PRESETS",
    "SCHEDULERS",
    "GANDataArguments",
    "GANEvalArguments",
    "GANModelArguments",
    "GANTrainArguments",
]
