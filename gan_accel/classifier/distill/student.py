"""The student: loaded from its own checkpoint, or made from the teacher the way DistilBERT was.

DistilBERT's initialisation (Sanh et al. 2019, ``research_projects/distillation/scripts/
extract_distilbert.py``): a student of the teacher's configuration with fewer transformer
layers, whose embeddings and layers are copied from the teacher, one layer out of two. Here
every weight outside the layer stack (embeddings, pooler, classification head) is copied and the
student's layer i is the teacher's layer ``round(i x (L_t - 1) / (L_s - 1))``: evenly spaced,
first and last kept; for 12 -> 6 that is DistilBERT's own choice, layers 0, 2, 4, 7, 9, 11.
"""

from __future__ import annotations

import copy
from typing import List, Tuple

import torch

from ...errors import UserError


def layer_map(teacher_layers: int, student_layers: int) -> List[int]:
    """Teacher layer index copied into each student layer (evenly spaced, first and last kept)."""
    if not 1 <= student_layers <= teacher_layers:
        raise UserError(
            f"--student_layers {student_layers}: must be between 1 and the teacher's {teacher_layers} layers"
        )
    if student_layers == 1:
        return [0]
    return [round(i * (teacher_layers - 1) / (student_layers - 1)) for i in range(student_layers)]


def layer_stack(model: torch.nn.Module) -> Tuple[str, torch.nn.ModuleList]:
    """``(state-dict prefix, ModuleList)`` of the transformer layers: the ModuleList whose length is
    the config's layer count (``distilbert.transformer.layer``, ``bert.encoder.layer``, ...)."""
    depth = model.config.num_hidden_layers
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == depth:
            return f"{name}.", module
    raise UserError(
        f"--student_from_teacher: found no stack of {depth} transformer layers in the teacher "
        f"({type(model).__name__}); pass --student_model_name_or_path instead"
    )


def student_from_teacher(teacher: torch.nn.Module, student_layers: int) -> torch.nn.Module:
    """A shallower copy of ``teacher`` (same config and class, ``student_layers`` layers)."""
    from transformers import AutoModelForSequenceClassification

    config = copy.deepcopy(teacher.config)
    mapping = layer_map(config.num_hidden_layers, student_layers)
    config.num_hidden_layers = student_layers  # DistilBertConfig maps it onto n_layers
    student = AutoModelForSequenceClassification.from_config(config)
    prefix, _ = layer_stack(teacher)
    source = teacher.state_dict()
    weights = {}
    for key in student.state_dict():
        if key.startswith(prefix):
            index, rest = key[len(prefix) :].split(".", 1)
            weights[key] = source[f"{prefix}{mapping[int(index)]}.{rest}"]
        else:
            weights[key] = source[key]
    student.load_state_dict({k: v.detach().clone() for k, v in weights.items()}, strict=True)
    return student


def parameter_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
