"""The sequence classifier as a recipe on the engine: one network, one optimizer (weight decay
off for biases and LayerNorm), a linear warm-up schedule, one phase with the model's own loss."""
from __future__ import annotations

from ..engine import Network, Optimizer, Phase, Recipe
from .config import ClassifierTrainArguments
from .model import ScheduleLength, build_optimizer


def classification_loss(s):
    loss = s.nets.model(**s.batch).loss  # cross-entropy over the labels in the batch
    return loss, {"loss/train": loss.detach()}


def classifier_recipe(model, args: ClassifierTrainArguments, length: ScheduleLength) -> Recipe:
    return Recipe(
        networks=[Network("model", model, optimizer="model")],
        optimizers=[Optimizer("model", lambda modules: build_optimizer(modules[0], args),
                              length.lr_schedule(),
                              max_grad_norm=args.max_grad_norm)],
        phases=[Phase("train", trains=["model"], loss=classification_loss)],
        progress="model",
    )
