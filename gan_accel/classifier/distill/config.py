"""Typed settings of distillation: which teacher and student, and the loss weights.

Data flags come from :class:`~gan_accel.classifier.config.ClassifierDataArguments`, optimisation
and evaluation cadence from :class:`~gan_accel.classifier.config.ClassifierTrainArguments`, the
run folder, precision, accumulation and checkpoints from :class:`gan_accel.config.RunArguments`:
a distillation run takes the classifier's flags plus these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ...config.fields import FREE, WARN, check_positive
from ...errors import ConfigError


@dataclass
class DistillModelArguments:
    """The teacher (fine-tuned, frozen) and where the student's weights come from."""

    teacher_model_name_or_path: Optional[str] = field(
        default=None,
        metadata={
            "reads": True,
            "help": "Fine-tuned teacher: a save_pretrained folder (or Hub name) of an AutoModelForSequenceClassification with the data's label set.",
        },
    )
    student_model_name_or_path: Optional[str] = field(
        default=None,
        metadata={
            "reads": True,
            "help": "Student checkpoint (any AutoModelForSequenceClassification-loadable folder sharing the teacher's tokenizer vocabulary); or pass --student_from_teacher.",
        },
    )
    student_from_teacher: bool = field(
        default=False,
        metadata={
            "help": "DistilBERT's initialisation: a student of the teacher's config with --student_layers layers, its embeddings, head and evenly spaced layers copied from the teacher."
        },
    )
    student_layers: Optional[int] = field(
        default=None,
        metadata={
            "help": "Transformer layers of the --student_from_teacher student (default: half the teacher's, rounded up)."
        },
    )
    gradient_checkpointing: bool = field(
        default=False, metadata={"help": "Recompute the student's activations in backward (less memory)."}
    )

    def __post_init__(self) -> None:
        if not self.teacher_model_name_or_path:
            raise ConfigError(
                "--teacher_model_name_or_path is required: a fine-tuned classifier folder (save_pretrained)"
            )
        if bool(self.student_model_name_or_path) == bool(self.student_from_teacher):
            raise ConfigError("pass exactly one of --student_model_name_or_path or --student_from_teacher")
        if self.student_layers is not None and not self.student_from_teacher:
            raise ConfigError(
                "--student_layers needs --student_from_teacher (a --student_model_name_or_path "
                "model keeps its own depth)"
            )
        check_positive("student_layers", self.student_layers)


@dataclass
class DistillArguments:
    """The loss: alpha_kd x T^2 x KL(teacher/T || student/T) + alpha_ce x CE + alpha_cos x cosine."""

    alpha_kd: float = field(
        default=0.5,
        metadata={
            "resume": WARN,
            "help": "Weight of the soft-target loss T^2 x KL(softmax(teacher/T) || softmax(student/T)) (0: labels only, the ablation).",
        },
    )
    alpha_ce: float = field(
        default=0.5, metadata={"resume": WARN, "help": "Weight of the cross-entropy on the true labels."}
    )
    alpha_cos: float = field(
        default=0.0,
        metadata={
            "resume": WARN,
            "help": "Weight of the cosine loss between the last hidden states of student and teacher (needs equal widths).",
        },
    )
    temperature: float = field(
        default=2.0,
        metadata={
            "resume": WARN,
            "help": "Softmax temperature T of the soft targets (1: the plain probabilities).",
        },
    )
    cache_teacher_logits: bool = field(
        default=False,
        metadata={
            "resume": FREE,
            "help": "Compute the teacher's logits on the training set once (saved in the run folder, reused on resume) and skip the teacher forward while training.",
        },
    )

    def __post_init__(self) -> None:
        for flag in ("alpha_kd", "alpha_ce", "alpha_cos"):
            check_positive(flag, getattr(self, flag), allow_zero=True)
        if self.alpha_kd + self.alpha_ce + self.alpha_cos == 0:
            raise ConfigError("--alpha_kd, --alpha_ce and --alpha_cos are all 0: give at least one loss a weight")
        check_positive("temperature", self.temperature)
        if self.cache_teacher_logits and self.alpha_cos > 0:
            raise ConfigError(
                "--cache_teacher_logits keeps only the teacher's logits, not its hidden states: "
                "it cannot be combined with --alpha_cos > 0"
            )

    @property
    def needs_teacher_in_loop(self) -> bool:
        """Whether a training step runs the teacher (not when its logits are cached or unused)."""
        return self.alpha_cos > 0 or (self.alpha_kd > 0 and not self.cache_teacher_logits)
