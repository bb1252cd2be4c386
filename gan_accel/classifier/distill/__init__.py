"""Knowledge distillation of a sequence classifier: a frozen teacher, a trained student, as a
recipe on the engine (:mod:`gan_accel.engine`).

``losses`` (pure functions), ``config`` (typed flags), ``student`` (DistilBERT's initialisation),
``networks`` (loading and the label/vocabulary checks), ``teacher`` (the teacher's forward and
the logit cache), ``recipe`` (the declaration), ``evaluation`` (teacher, student, agreement,
best-student export), ``train`` (the run).
"""

from ..config import ClassifierDataArguments, ClassifierTrainArguments
from .config import DistillArguments, DistillModelArguments

# The flags of scripts/distill_classifier.py, besides RunArguments: the classifier's data and
# optimisation flags plus the teacher/student and the loss.
DISTILL_CONFIG_TYPES = (ClassifierDataArguments, DistillModelArguments, DistillArguments, ClassifierTrainArguments)

__all__ = ["DISTILL_CONFIG_TYPES", "DistillArguments", "DistillModelArguments"]
