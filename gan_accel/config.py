"""Shared run settings and the config parser used by every script.

Each training path declares its own typed dataclasses; :func:`parse_config` turns CLI flags and
an optional ``--config FILE`` (YAML or JSON) into instances of them. Flags given on the command
line override values from the file, which override the dataclass defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import inspect
import json
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Type

import yaml

from .errors import ConfigError, UserError

MIXED_PRECISION = ("no", "bf16", "fp16")
# Fields never written anywhere (config.json, checkpoints, trackers, model cards).
SECRET_FIELDS = frozenset({"hub_token"})


# How a field may differ between a checkpoint's run and the run that resumes it, declared in the
# field's metadata (``metadata={"resume": ...}``), so every task's config carries its own rule.
# Each name says what a resume with another value gets:
FREE = "free"  # changes freely, no warning: cadence, length, bookkeeping or speed (same maths, same data order)
WARN = "warn"  # changes with a warning: the maths of later steps, no shape and not the data order
#                (e.g. lower learning rates after a divergence)
REFUSE = "refuse"  # refused in one line: shapes, data, seed, batch size, ...; a field that says nothing
RESUME_POLICIES = (FREE, WARN, REFUSE)
# ``metadata={"resume_as": fn}``: a resume compares fn(saved) with fn(current), for a field whose
# spellings differ for one setting (--time_budget 40 and 40s are the same budget).
RESUME_METADATA = ("resume", "resume_as")


def choice(default: Any, choices: Sequence[str], help: str, resume: str = REFUSE) -> Any:
    """A string field with argparse choices; validated again in ``__post_init__`` because values
    from a config file bypass argparse."""
    return field(
        default=default,
        metadata={"help": f"{help} One of: {', '.join(choices)}.", "choices": list(choices), "resume": resume},
    )


def check_choice(flag: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ConfigError(f"--{flag} must be one of {', '.join(choices)}; got {value!r}")


# numpy's generators take seeds in [0, 2**32 - 1], and set_seed (weights, data order) seeds numpy
# too: a seed outside it would be accepted here and fail after the run folder was written.
MAX_SEED = 2**32 - 1


def check_seed(flag: str, value: int) -> None:
    if not 0 <= value <= MAX_SEED:
        raise ConfigError(f"--{flag} must be in [0, {MAX_SEED}]; got {value}")


def check_hub_model_id(flag: str, value: Optional[str]) -> None:
    """The Hub's own rule for a repo id (one '/', allowed characters, length), checked at start:
    the Hub would refuse it only at the upload, after the whole run, in words that blame the token."""
    if value is None:
        return
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError as err:
        reason = str(err).replace("\n", " ")
        raise ConfigError(f"--{flag} {value!r}: not a Hub repo id ({reason}); write it as USER/NAME") from None


def check_positive(flag: str, value: float, allow_zero: bool = False) -> None:
    if value is None:
        return
    if not math.isfinite(value):  # NaN passes every comparison below; inf is never a usable setting
        raise ConfigError(f"--{flag} must be a finite number; got {value}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"--{flag} must be {bound}; got {value}")


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
        from .loop.trackers import parse_report_to

        return parse_report_to(self.report_to)


# Renamed fields: a checkpoint written before the rename records the old name.
RENAMED_FIELDS = {"num_warmup_steps": "warmup_steps", "eval_steps": "eval_every"}


def load_config_file(path: str) -> dict:
    """Read a YAML or JSON config file into a flat ``{field: value}`` dict."""
    p = Path(path)
    if p.is_dir():
        raise UserError(f"--config {path}: is a folder; pass a YAML or JSON file of flag values")
    if not p.is_file():
        raise UserError(f"--config {path}: file not found; pass a YAML or JSON file of flag values")
    try:
        text = p.read_text()
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as err:
        detail = str(err).replace("\n", " ")
        raise UserError(f"--config {path}: not a readable YAML/JSON file ({detail}); fix the file syntax") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"--config {path}: expected a mapping of flag names to values, got {type(data).__name__}")
    return data


def parse_config(types: Tuple[Type, ...], argv: Optional[Sequence[str]], description: str = "") -> tuple:
    """Parse ``argv`` into one instance of each dataclass in ``types``.

    ``--config FILE`` supplies defaults; explicit flags win. Unknown keys in the file are an error
    naming the file and the key.
    """
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    pre.error = _one_line_error  # e.g. --config -x: argparse would print its usage block first
    known, _ = pre.parse_known_args(argv)

    parser = _parser_class()(types, description=description, formatter_class=_HelpFormatter)
    parser.error = _one_line_error  # argparse would print the whole usage block before the error
    parser.add_argument(
        "--config", default=None, help="YAML or JSON file of flag values (flags on the command line override it)."
    )
    if known.config:
        values = _rename_aliases(load_config_file(known.config), types)
        fields = {f.name for t in types for f in dataclasses.fields(t)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise UserError(
                f"--config {known.config}: unknown key(s) {', '.join(unknown)}; run with --help for the valid flags"
            )
        values = _typed_file_values(types, values, known.config)
        parser.set_defaults(**values)
        # set_defaults does not lift required=True, so a required field given in the file must be.
        for action in parser._actions:
            if action.dest in values:
                action.required = False
    try:
        parsed = parser.parse_args_into_dataclasses(
            args=list(argv) if argv is not None else None, return_remaining_strings=True
        )
    except (TypeError, ValueError) as err:
        if isinstance(err, UserError):
            raise
        raise UserError(f"invalid configuration: {err}") from None
    if parsed[-1]:
        raise UserError(unknown_flags_message(parsed[-1], [o for a in parser._actions for o in a.option_strings]))
    configs = tuple(parsed[: len(types)])
    for cfg in configs:
        for name, hint in _field_types(type(cfg)).items():
            value = getattr(cfg, name)
            if hint is float and isinstance(value, float) and not math.isfinite(value):
                # Flags and YAML both accept nan/inf; no setting of ours means anything with them.
                raise ConfigError(f"--{name} must be a finite number; got {value}")
    return configs


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows a flag's default unless it is None or the help already says it: a None
    default means "not given" (the help says what happens then), and a help that names its own
    default ("default: the generator's") read "(default: the generator's). (default: None)".

    The description (a script's docstring) keeps its lines: re-wrapped, its example commands ran
    together into one paragraph. Only the description; the flags' help is still wrapped."""

    def _fill_text(self, text, width, indent):
        return super()._fill_text(inspect.cleandoc(text), width, indent)

    def _get_help_string(self, action):
        if action.default is None or "(default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _parser_class():
    """HfArgumentParser, with our own field metadata (the resume policy, what a run reads) kept
    out of argparse."""
    import copy
    from types import MappingProxyType

    from transformers import HfArgumentParser

    class Parser(HfArgumentParser):
        @staticmethod
        def _parse_dataclass_field(parser, f: dataclasses.Field):
            f = copy.copy(f)
            f.metadata = MappingProxyType(
                {k: v for k, v in f.metadata.items() if k not in (*RESUME_METADATA, "reads")}
            )
            return HfArgumentParser._parse_dataclass_field(parser, f)

    return Parser


def _field_types(cls: Type) -> dict:
    """``{field: type}`` with ``Optional[X]`` reduced to ``X`` (annotations are strings here)."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        out[f.name] = args[0] if typing.get_origin(hint) is typing.Union and len(args) == 1 else hint
    return out


def _typed_file_values(types: Tuple[Type, ...], values: dict, path: str) -> dict:
    """Check a config file's values against the fields' types: argparse converts only string
    defaults, so without this ``max_steps: 2.7`` would run as a float count of steps."""
    hints = {name: hint for t in types for name, hint in _field_types(t).items()}
    out = dict(values)
    for key, value in values.items():
        hint = hints.get(key)
        bad = None
        if value is None or hint not in (int, float, bool, str):
            continue
        if hint is bool and not isinstance(value, bool):
            bad = "true or false"
        elif hint is int and not (isinstance(value, int) and not isinstance(value, bool)):
            if isinstance(value, float) and value.is_integer():
                out[key] = int(value)
            else:
                bad = "an integer"
        elif hint is float and not isinstance(value, bool) and isinstance(value, (int, float, str)):
            try:
                out[key] = float(value)  # YAML reads 1e-4 (no dot) as a string
            except ValueError:
                bad = "a number"
        elif hint is float:
            bad = "a number"
        elif hint is str and not isinstance(value, str):
            bad = "a string"
        if bad:
            raise UserError(f"--config {path}: {key} must be {bad}; got {value!r}")
        if hint is float and not math.isfinite(out[key]):
            raise UserError(f"--config {path}: --{key} must be a finite number; got {value!r}")
    return out


def field_aliases(types: Tuple[Type, ...]) -> dict:
    """Old spellings of renamed fields (``metadata["aliases"]``, e.g. ``--eval_steps``) -> field name."""
    return {
        alias.lstrip("-"): f.name
        for t in types
        for f in dataclasses.fields(t)
        for alias in f.metadata.get("aliases", [])
    }


def _rename_aliases(values: dict, types: Tuple[Type, ...]) -> dict:
    """A config file may use a field's old spelling, as the command line may."""
    aliases = field_aliases(types)
    return {aliases.get(key, key): value for key, value in values.items()}


def unknown_flags_message(remaining: Sequence[str], options: Sequence[str]) -> str:
    """The flags argparse did not know, each with the closest valid flag when one is close."""
    flags = [arg.split("=", 1)[0] for arg in remaining if arg.startswith("-")]
    if not flags:
        return f"unexpected argument(s) {' '.join(remaining)}; run with --help for the valid flags"
    parts = []
    for flag in flags:
        close = difflib.get_close_matches(flag, options, n=1, cutoff=0.6)
        parts.append(f"{flag} (did you mean {close[0]}?)" if close else flag)
    return f"unknown flag {', '.join(parts)}; run with --help for the valid flags"


def _one_line_error(message: str):
    raise UserError(f"{message}; run with --help for the valid flags")


def config_to_dict(*configs: Any) -> dict:
    """Flatten dataclass configs into one JSON-serialisable dict (field names are unique)."""
    out: dict = {}
    for cfg in configs:
        # Secrets (--hub_token) never reach config.json, checkpoints, trackers or model cards.
        out.update({k: v for k, v in dataclasses.asdict(cfg).items() if k not in SECRET_FIELDS})
    return out


def resume_policy(*types: Type) -> Dict[str, str]:
    """``{field: FREE | WARN | REFUSE}`` of the dataclasses ``types`` (instances or classes),
    from each field's ``metadata["resume"]`` (REFUSE when it declares none: the safe default)."""
    policy = {}
    for cls in types:
        for f in dataclasses.fields(cls):
            value = f.metadata.get("resume", REFUSE)
            if value not in RESUME_POLICIES:
                raise TypeError(f"{cls.__name__}.{f.name}: resume policy {value!r} is not one of {RESUME_POLICIES}")
            policy[f.name] = value
    return policy


def resume_compare_as(*types: Type) -> Dict[str, Callable[[Any], Any]]:
    """``{field: fn}`` of the fields that declare ``metadata["resume_as"]``."""
    return {
        f.name: f.metadata["resume_as"] for cls in types for f in dataclasses.fields(cls) if "resume_as" in f.metadata
    }


def _same_setting(saved: Any, current: Any, compare_as: Optional[Callable[[Any], Any]]) -> bool:
    if saved == current:
        return True
    if compare_as is None or saved is None or current is None:
        return False
    try:
        return compare_as(saved) == compare_as(current)
    except (TypeError, ValueError):  # a value the checkpoint holds but this version cannot read
        return False


def resume_incompatibilities(saved: dict, current: dict, policy: Optional[Dict[str, str]] = None) -> list:
    """Names and values of fields that differ between a checkpoint's config and the current one
    and may not change on resume (shapes, data, seed, batch size, accumulation, ...)."""
    return resume_changes(saved, current, policy)[0]


def resume_changes(
    saved: dict,
    current: dict,
    policy: Optional[Dict[str, str]] = None,
    compare_as: Optional[Dict[str, Callable[[Any], Any]]] = None,
) -> Tuple[list, list]:
    """(refused, allowed-with-a-warning) differences between a checkpoint's config and this one,
    each as ``--key old -> new``, by ``policy`` (:func:`resume_policy`; by default that of
    :class:`RunArguments`; a key it does not know is refused). ``compare_as``
    (:func:`resume_compare_as`): fields compared by what their values mean. A checkpoint written
    before a field was renamed is read under the new name."""
    policy = resume_policy(RunArguments) if policy is None else policy
    compare_as = compare_as or {}
    saved = {RENAMED_FIELDS.get(k, k): v for k, v in saved.items()}
    refused = []
    changed = []
    for key in sorted(set(saved) | set(current)):
        rule = policy.get(key, REFUSE)
        if rule == FREE or _same_setting(saved.get(key), current.get(key), compare_as.get(key)):
            continue
        line = f"--{key} {saved.get(key)!r} -> {current.get(key)!r}"
        (changed if rule == WARN else refused).append(line)
    return refused, changed
