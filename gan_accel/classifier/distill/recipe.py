"""Distillation as a recipe on the engine: a trained student, a frozen teacher, one phase.

    networks:  student (optimizer "student"), teacher (no optimizer: never trains, never DDP-wrapped)
    phases:    distill: trains the student on
               alpha_kd x T^2 x KL(teacher/T || student/T) + alpha_ce x CE(labels) + alpha_cos x cosine

The teacher's logits come from its forward on the same micro-batch, or from the cache computed
once before training (``--cache_teacher_logits``): a tensor ``[N, C]`` indexed by each example's
position in the training set.
"""

from __future__ import annotations

from typing import List, Mapping, Optional

import torch

from ...engine import Network, Optimizer, Phase, Recipe
from ..config import ClassifierTrainArguments
from ..model import ScheduleLength, build_optimizer
from .config import DistillArguments
from .losses import distillation_loss
from .teacher import EXAMPLE_ID, model_inputs, teacher_forward


class TeacherLogits:
    """The cached teacher logits (``None`` until computed): filled after ``prepare``, when the
    teacher sits on its device, and read by the loss."""

    def __init__(self) -> None:
        self.logits: Optional[torch.Tensor] = None

    def lookup(self, example_ids: torch.Tensor) -> torch.Tensor:
        return self.logits[example_ids]  # [B, C]


def distill_loss_fn(args: DistillArguments, cache: TeacherLogits):
    """The phase's loss: the student's forward, the teacher's (or its cached logits), the loss."""
    hidden = args.alpha_cos > 0

    def loss(s):
        batch = s.batch
        out = s.nets.student(**model_inputs(batch), output_hidden_states=hidden)
        teacher_logits = None
        teacher_hidden = None
        if args.needs_teacher_in_loop:
            teacher_logits, teacher_hidden = teacher_forward(s.nets.teacher, batch, hidden=hidden)
        elif args.alpha_kd > 0:
            teacher_logits = cache.lookup(batch[EXAMPLE_ID])
        pair = (out.hidden_states[-1], teacher_hidden, batch["attention_mask"]) if hidden else None
        return distillation_loss(
            out.logits,
            teacher_logits,
            batch["labels"],
            alpha_kd=args.alpha_kd,
            alpha_ce=args.alpha_ce,
            temperature=args.temperature,
            alpha_cos=args.alpha_cos,
            hidden=pair,
        )

    return loss


class DistillRecipe:
    def __init__(
        self,
        args: DistillArguments,
        train_args: ClassifierTrainArguments,
        length: ScheduleLength,
        cache: TeacherLogits,
    ) -> None:
        self.args = args
        self.train_args = train_args
        self.length = length
        self.cache = cache

    def recipe(self, networks: Mapping[str, torch.nn.Module]) -> Recipe:
        train_args = self.train_args

        def make_optimizer(modules: List[torch.nn.Module]):
            return build_optimizer(modules[0], train_args)  # the classifier's: no decay on biases/LayerNorm

        return Recipe(
            networks=[
                Network("student", networks["student"], optimizer="student"),
                Network("teacher", networks["teacher"]),
            ],
            optimizers=[
                Optimizer("student", make_optimizer, self.length.lr_schedule(), max_grad_norm=train_args.max_grad_norm)
            ],
            phases=[Phase("distill", trains=["student"], loss=distill_loss_fn(self.args, self.cache))],
            progress="student",
        )
