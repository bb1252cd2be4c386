"""Settings of the shared training loop (:class:`RunArguments`) and how a run's configs are written
out (:func:`config_to_dict`, which leaves the secrets out)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import ConfigError
from .fields import FREE, check_choice, check_hub_model_id, check_positive, check_seed, choice

MIXED_PRECISION = ("no", "bf16", "fp16")
# Fields never written anywhere (config.json, checkpoints, trackers, model cards).
SECRET_FIELDS = frozenset({"hub_token"})


@dataclass
class RunArguments:
    """Settings of the shared training loop (every training path: GAN, CycleGAN, classifier, distillation)."""

    output_dir: str = field(
        metadata={"resume": FREE, "help": "Run folder: config, metrics, checkpoints, samples, exports."}
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "resume": FREE,
            "help": "Delete a previous run in --output_dir instead of refusing to start (not with --resume_from_checkpoint, which continues it).",
        },
    )
    seed: int = field(
        default=0, metadata={"help": "Seed for weights, data order, noise and augmentation (0 to 4294967295)."}
    )
    mixed_precision: str = choice(
        "no",
        MIXED_PRECISION,
        "Autocast precision (fp32 is the CPU default: bf16 is slow on AVX2-only CPUs, fp16 is GPU-only; a GAN --time_budget run of 2 minutes or more on a CPU without this flag times both and keeps the faster).",
    )
    gradient_accumulation_steps: int = field(
        default=1, metadata={"help": "Micro-batches per optimizer update (all optimizers share this clock)."}
    )
    report_to: str = field(
        default="none",
        metadata={
            "resume": FREE,
            "help": "Experiment trackers besides OUTPUT_DIR/metrics.jsonl: none, all (every installed one) or a comma-separated list of tensorboard, wandb, mlflow, aim, comet_ml, clearml, dvclive, swanlab, trackio.",
        },
    )
    log_every: int = field(
        default=20,
        metadata={
            "resume": FREE,
            "help": "Optimizer steps between log lines (the only host syncs of the hot loop): metrics.jsonl, the "
            "progress bar, and a printed line when no bar is on a terminal (TQDM_DISABLE=1, a batch job's log).",
        },
    )
    checkpointing_steps: int = field(
        default=500,
        metadata={"resume": FREE, "help": "Optimizer steps between checkpoints (0: only at the end and on a signal)."},
    )
    checkpoints_total_limit: int = field(
        default=2, metadata={"resume": FREE, "help": "Complete checkpoints kept; older ones are deleted."}
    )
    resume_from_checkpoint: Optional[str] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "'latest' (the newest complete checkpoint in --output_dir, or a fresh start if none) or a checkpoint folder. A run stopped by Ctrl-C or SIGTERM saves a checkpoint and exits with 128 + the signal's number (130, 143), so `train && sample` samples no unfinished run.",
        },
    )
    allow_data_change: bool = field(
        default=False,
        metadata={
            "resume": FREE,
            "help": "Resume even though the data differs from the checkpoint's (files, sizes, file contents, "
            "classes), with a warning; refused without it.",
        },
    )
    max_nonfinite_steps: int = field(
        default=10, metadata={"resume": FREE, "help": "Consecutive skipped non-finite steps before the run stops."}
    )
    loss_explosion_factor: float = field(
        default=1e3,
        metadata={
            "resume": FREE,
            "help": "Warn (progress bar and metrics.jsonl) when a logged loss exceeds this many times the median of its recent logged values (0: off).",
        },
    )
    loss_explosion_window: int = field(
        default=20,
        metadata={"resume": FREE, "help": "Logged values of each loss that the explosion check takes the median of."},
    )
    cpu: bool = field(default=False, metadata={"resume": FREE, "help": "Force the CPU even when a GPU is present."})
    push_to_hub: bool = field(
        default=False,
        metadata={
            "resume": FREE,
            "help": "Upload the export(s) with their model card to the Hugging Face Hub when the run finishes.",
        },
    )
    hub_model_id: Optional[str] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "Hub repo for --push_to_hub, as USER/NAME (a CycleGAN run pushes USER/NAME-A2B and USER/NAME-B2A).",
        },
    )
    hub_token: Optional[str] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "Hub token for --push_to_hub (default: HF_TOKEN or `hf auth login`); never written to any file.",
        },
    )
    hub_private: bool = field(
        default=False, metadata={"resume": FREE, "help": "Create the --hub_model_id repo as private."}
    )
    dry_run: bool = field(default=False, metadata={"resume": FREE, "help": "Print the resolved config and exit."})
    debug: bool = field(
        default=False, metadata={"resume": FREE, "help": "Show full tracebacks instead of one-line errors."}
    )

    def __post_init__(self) -> None:
        if not self.output_dir:
            raise ConfigError("--output_dir must be a folder path")
        check_choice("mixed_precision", self.mixed_precision, MIXED_PRECISION)
        check_seed("seed", self.seed)
        self.trackers  # noqa: B018  # an unknown or uninstalled tracker fails here, before any file is written
        check_positive("gradient_accumulation_steps", self.gradient_accumulation_steps)
        check_positive("log_every", self.log_every)
        check_positive("checkpointing_steps", self.checkpointing_steps, allow_zero=True)
        check_positive("checkpoints_total_limit", self.checkpoints_total_limit)
        check_positive("max_nonfinite_steps", self.max_nonfinite_steps)
        check_positive("loss_explosion_factor", self.loss_explosion_factor, allow_zero=True)
        check_positive("loss_explosion_window", self.loss_explosion_window)
        if self.push_to_hub and not self.hub_model_id:
            raise ConfigError("--push_to_hub needs --hub_model_id USER/NAME (the Hub repo to create or update)")
        if self.overwrite_output_dir and self.resume_from_checkpoint:
            # Which one wins cannot be guessed: a resume that silently keeps the run, or an overwrite
            # that deletes the checkpoint named next to it, would each surprise half the users.
            raise ConfigError(
                f"--overwrite_output_dir with --resume_from_checkpoint {self.resume_from_checkpoint}: one deletes "
                "the run in --output_dir, the other continues it; pass only one of them"
            )
        check_hub_model_id("hub_model_id", self.hub_model_id)

    @property
    def trackers(self) -> list:
        from ..loop.trackers import parse_report_to

        return parse_report_to(self.report_to)


def config_to_dict(*configs: Any) -> dict:
    """Flatten dataclass configs into one JSON-serialisable dict (field names are unique)."""
    out: dict = {}
    for cfg in configs:
        # Secrets (--hub_token) never reach config.json, checkpoints, trackers or model cards.
        out.update({k: v for k, v in dataclasses.asdict(cfg).items() if k not in SECRET_FIELDS})
    return out
