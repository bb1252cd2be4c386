"""Typed settings of the classifier path, one dataclass per concern.

Shared loop settings (output folder, seed, precision, accumulation, trackers, checkpoints,
resume) come from :class:`gan_accel.config.RunArguments`; these add data, model and optimisation.
Every field is validated in ``__post_init__`` (values from ``--config FILE`` bypass argparse) with a
:class:`ConfigError` that names the flag.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List, Optional

from ..config.fields import FREE, WARN, check_choice, check_positive, choice
from ..errors import ConfigError

OPTIMIZERS = ("adam", "adamw", "adafactor")
BEST_METRICS = ("accuracy", "f1_macro", "loss")
TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json")


def check_finite(flag: str, value: float) -> None:
    """NaN passes every comparison-based check (``nan < 0`` and ``nan == 0`` are both False), and
    torch would only fail later with a traceback (after config.json was written): refuse it here."""
    if value is not None and not math.isfinite(value):
        raise ConfigError(f"--{flag} must be a finite number; got {value}")


@dataclass
class ClassifierDataArguments:
    """Where the labelled texts come from and how they are tokenised."""

    train_file: Optional[str] = field(
        default=None, metadata={"reads": True, "help": "Training data: .csv, .tsv or .jsonl (JSON Lines)."}
    )
    validation_file: Optional[str] = field(
        default=None, metadata={"reads": True, "help": "Validation data, same formats; required with --train_file."}
    )
    dataset_name: Optional[str] = field(
        default=None,
        metadata={
            "help": "A Hub dataset with train/validation splits (needs the optional 'hub' extra: pip install 'gan_accel[hub]')."
        },
    )
    dataset_config: Optional[str] = field(
        default=None, metadata={"help": "Configuration name of --dataset_name (e.g. 'sst2' of 'glue')."}
    )
    text_column: str = field(default="text", metadata={"help": "Column holding the text."})
    text_pair_column: Optional[str] = field(
        default=None, metadata={"help": "Optional second text column (sentence pairs), encoded as one pair."}
    )
    label_column: str = field(default="label", metadata={"help": "Column holding the label (string or integer)."})
    label_names: Optional[List[str]] = field(
        default=None,
        metadata={
            "help": "Label names in class-id order; default: the training labels, sorted (numerically when all are integers)."
        },
    )
    max_length: int = field(
        default=128,
        metadata={"help": "Tokens per text (pair) after truncation; batches are padded only to their longest text."},
    )
    group_by_length: bool = field(
        default=True,
        metadata={
            "help": "Training batches of similar lengths (shuffle, sort within mega-batches of ~50 batches, shuffle the batches): far less padding on real text. --no_group_by_length: plain shuffling."
        },
    )
    pad_to_multiple_of: Optional[int] = field(
        default=None,
        metadata={
            "help": "Round each batch's padded length up to a multiple of this (tensor cores like multiples of 8). Default: 8 on a GPU, none (1) on a CPU."
        },
    )

    def __post_init__(self) -> None:
        if bool(self.train_file) == bool(self.dataset_name):
            raise ConfigError("pass exactly one of --train_file (with --validation_file) or --dataset_name")
        if self.train_file and not self.validation_file:
            raise ConfigError("--validation_file is required with --train_file (evaluation runs every epoch)")
        for flag in ("train_file", "validation_file"):
            path = getattr(self, flag)
            if path and not path.lower().endswith(TABLE_SUFFIXES):
                raise ConfigError(f"--{flag} {path}: unsupported extension; use .csv, .tsv or .jsonl")
        if self.dataset_config and not self.dataset_name:
            raise ConfigError("--dataset_config needs --dataset_name")
        for flag in ("text_column", "label_column"):
            if not getattr(self, flag):
                raise ConfigError(f"--{flag} must be a column name")
        if self.label_names is not None:
            if len(self.label_names) < 2 or len(set(self.label_names)) != len(self.label_names):
                raise ConfigError(f"--label_names needs at least two distinct names; got {self.label_names}")
        check_positive("max_length", self.max_length)
        check_positive("pad_to_multiple_of", self.pad_to_multiple_of)

    def padding_multiple(self, device_type: str) -> Optional[int]:
        """``--pad_to_multiple_of`` resolved for the device: 8 on CUDA unless set, else none."""
        multiple = self.pad_to_multiple_of or (8 if device_type == "cuda" else 1)
        return multiple if multiple > 1 else None


@dataclass
class ClassifierModelArguments:
    """The pretrained checkpoint and how it runs."""

    model_name_or_path: str = field(
        default="distilbert-base-cased",
        metadata={
            "reads": True,
            "help": "Hub name or local folder (save_pretrained) of the pretrained model and tokenizer.",
        },
    )
    gradient_checkpointing: bool = field(
        default=False,
        metadata={"help": "Recompute activations in backward: less memory, about 30 percent more compute."},
    )

    def __post_init__(self) -> None:
        if not self.model_name_or_path:
            raise ConfigError("--model_name_or_path must be a Hub name or a local model folder")


@dataclass
class ClassifierTrainArguments:
    """Optimisation, schedule and evaluation cadence."""

    optimizer: str = choice(
        "adam",
        OPTIMIZERS,
        "Optimizer (Adam is the course's choice; weight decay never applies to biases and LayerNorm).",
    )
    learning_rate: float = field(
        default=2e-5, metadata={"resume": WARN, "help": "Peak learning rate, reached after warm-up."}
    )
    weight_decay: float = field(
        default=0.0,
        metadata={"resume": WARN, "help": "Weight decay on weight matrices (not on biases or LayerNorm)."},
    )
    warmup_steps: Optional[int] = field(
        default=None,
        metadata={
            "resume": WARN,
            "help": "Optimizer updates of linear warm-up; overrides --warmup_ratio (old spelling: --num_warmup_steps).",
            "aliases": ["--num_warmup_steps"],
        },
    )
    warmup_ratio: float = field(
        default=0.1,
        metadata={"resume": WARN, "help": "Warm-up as a share of all optimizer updates (the course uses 0.1)."},
    )
    num_train_epochs: int = field(
        default=3,
        metadata={"resume": FREE, "help": "Passes over the training data (ignored when --max_steps is set)."},
    )
    max_steps: Optional[int] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "Total optimizer updates; overrides --num_train_epochs and sizes the schedule.",
        },
    )
    batch_size: int = field(
        default=16,
        metadata={"help": "Examples per process per micro-batch (global batch = this x processes x accumulation)."},
    )
    eval_batch_size: Optional[int] = field(
        default=None,
        metadata={"resume": FREE, "help": "Examples per process per evaluation batch (default: 2 x --batch_size)."},
    )
    max_grad_norm: float = field(
        default=1.0, metadata={"resume": WARN, "help": "Clip the global gradient norm to this (0: no clipping)."}
    )
    local_sgd_steps: int = field(
        default=0,
        metadata={
            "help": "Multi-process only: average weights every N updates instead of all-reducing gradients each update (Accelerate LocalSGD; 0: off)."
        },
    )
    eval_every: int = field(
        default=0,
        metadata={
            "resume": FREE,
            "help": "Also evaluate every N optimizer updates (0: only at the end of each epoch; old spelling: --eval_steps).",
            "aliases": ["--eval_steps"],
        },
    )
    metric_for_best_model: str = choice(
        "accuracy",
        BEST_METRICS,
        "Validation metric that picks the model kept in OUTPUT_DIR/model (loss: lower is better).",
    )

    def __post_init__(self) -> None:
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_choice("metric_for_best_model", self.metric_for_best_model, BEST_METRICS)
        for flag in ("learning_rate", "weight_decay", "warmup_ratio", "max_grad_norm"):
            check_finite(flag, getattr(self, flag))
        check_positive("learning_rate", self.learning_rate)
        check_positive("weight_decay", self.weight_decay, allow_zero=True)
        check_positive("warmup_steps", self.warmup_steps, allow_zero=True)
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ConfigError(f"--warmup_ratio must be in [0, 1); got {self.warmup_ratio}")
        check_positive("num_train_epochs", self.num_train_epochs)
        check_positive("max_steps", self.max_steps)
        if self.max_steps and self.warmup_steps is not None and self.warmup_steps >= self.max_steps:
            raise ConfigError(
                f"--warmup_steps {self.warmup_steps} must be smaller than the "
                f"{self.max_steps} optimizer updates of the run (--max_steps)"
            )
        check_positive("batch_size", self.batch_size)
        check_positive("eval_batch_size", self.eval_batch_size)
        check_positive("max_grad_norm", self.max_grad_norm, allow_zero=True)
        check_positive("local_sgd_steps", self.local_sgd_steps, allow_zero=True)
        check_positive("eval_every", self.eval_every, allow_zero=True)

    @property
    def greater_is_better(self) -> bool:
        return self.metric_for_best_model != "loss"
