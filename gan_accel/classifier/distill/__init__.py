"""Knowledge distillation of a sequence classifier: a frozen teacher, a trained student.

``losses`` (pure functions), ``config`` (typed flags), ``student`` (DistilBERT's initialisation),
``networks`` (loading and the label/vocabulary checks), ``teacher`` (the teacher's forward and
the logit cache).
"""
from .config import DistillArguments, DistillModelArguments

__all__ = ["DistillArguments", "DistillModelArguments"]
