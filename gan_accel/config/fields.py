"""How a config field is declared and checked: its resume policy (field metadata), string fields
with a fixed set of values, and the range checks every task's ``__post_init__`` calls, each
raising a :class:`~gan_accel.errors.ConfigError` that names the flag."""

from __future__ import annotations

import math
from dataclasses import field
from typing import Any, Optional, Sequence

from ..errors import ConfigError

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
