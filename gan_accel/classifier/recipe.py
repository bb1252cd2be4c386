"""The sequence classifier as a recipe on the engine: one network, one optimizer (weight decay
off for biases and LayerNorm), a linear warm-up schedule, one phase with the model's own loss."""
from __future__ import annotations

from typing import Mapping

import torch

from ..engine import Network, Optimizer, Phase, Recipe
from .config import ClassifierTrainArguments
from .model import ScheduleLength, build_optimizer


def classification_loss(s):
    loss = s.nets.model(**s.batch).loss  # cross-entropy over the labels in the batch
    return loss, {"loss/train": loss.detach()}


class ClassifierRecipe:
    def __init__(self, args: ClassifierTrainArguments, length: ScheduleLength, local_sgd: bool = False) -> None:
        """``local_sgd``: the replicas are averaged every few updates instead of all-reducing the
        gradients, so the ranks vote on skipping a non-finite update."""
        self.args, self.length, self.local_sgd = args, length, local_sgd

    def recipe(self, networks: Mapping[str, torch.nn.Module]) -> Recipe:
        args = self.args
        return Recipe(
            networks=[Network("model", networks["model"], optimizer="model")],
            optimizers=[Optimizer("model", lambda modules: build_optimizer(modules[0], args), self.length.lr_schedule(),
                                  max_grad_norm=args.max_grad_norm, agree_across_ranks=self.local_sgd)],
            phases=[Phase("train", trains=["model"], loss=classification_loss)],
            progress="model",
        )
