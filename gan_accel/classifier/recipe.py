"""The sequence classifier as a recipe on the engine: one network, one optimizer (weight decay
off for biases and LayerNorm), a linear warm-up schedule, one phase with the model's own loss."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import torch

from ..engine import Network, Optimizer, Phase, Recipe, State
from .config import ClassifierTrainArguments
from .model import ScheduleLength, build_optimizer

SCHEDULE_FILE = "schedule.json"


def classification_loss(s):
    loss = s.nets.model(**s.batch).loss  # cross-entropy over the labels in the batch
    return loss, {"loss/train": loss.detach()}


class ClassifierRecipe:
    def __init__(self, args: ClassifierTrainArguments, length: ScheduleLength, local_sgd: bool = False) -> None:
        """``local_sgd``: the replicas are averaged every few updates instead of all-reducing the
        gradients, so the ranks vote on skipping a non-finite update."""
        self.args = args
        self.length = length
        self.local_sgd = local_sgd

    def recipe(self, networks: Mapping[str, torch.nn.Module]) -> Recipe:
        args = self.args
        return Recipe(
            networks=[Network("model", networks["model"], optimizer="model")],
            optimizers=[
                Optimizer(
                    "model",
                    lambda modules: build_optimizer(modules[0], args),
                    self.length.lr_schedule(),
                    max_grad_norm=args.max_grad_norm,
                    agree_across_ranks=self.local_sgd,
                )
            ],
            phases=[Phase("train", trains=["model"], loss=classification_loss)],
            progress="model",
        )


def schedule_state(run, length: ScheduleLength) -> State:
    """The schedule's length, saved in every checkpoint: a resume that re-sizes it (another
    --max_steps / --num_train_epochs) says so instead of silently bending the LR curve."""
    current = {"total_updates": length.total_updates, "warmup_updates": length.warmup_updates}

    def write(folder: Path) -> None:
        (folder / SCHEDULE_FILE).write_text(json.dumps(current) + "\n")

    def read(folder: Path) -> None:
        path = folder / SCHEDULE_FILE
        saved = json.loads(path.read_text()) if path.is_file() else current
        if saved != current:
            run.print(
                f"warning: the checkpoint's LR schedule was {saved}, this run's is {current}: the linear "
                "schedule continues re-sized, so this is not identical to a run planned with this length"
            )

    return State("schedule", write=write, read=read)
