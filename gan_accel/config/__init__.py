"""Shared run settings and the config parser used by every script.

Each training path declares its own typed dataclasses; :func:`parse_config` turns CLI flags and
an optional ``--config FILE`` (YAML or JSON) into instances of them. Flags given on the command
line override values from the file, which override the dataclass defaults.

One concern per module: ``fields`` (declaring and checking a field, resume policies), ``run``
(:class:`RunArguments`), ``parse`` (flags and files to dataclasses), ``resume`` (what a resume may
change). Everything is importable from here.
"""

from .fields import (
    FREE,
    MAX_SEED,
    REFUSE,
    RESUME_METADATA,
    RESUME_POLICIES,
    WARN,
    check_choice,
    check_hub_model_id,
    check_positive,
    check_seed,
    choice,
)
from .parse import field_aliases, load_config_file, parse_config, unknown_flags_message
from .resume import RENAMED_FIELDS, resume_changes, resume_compare_as, resume_incompatibilities, resume_policy
from .run import MIXED_PRECISION, SECRET_FIELDS, RunArguments, config_to_dict

__all__ = [
    "FREE",
    "MAX_SEED",
    "MIXED_PRECISION",
    "REFUSE",
    "RENAMED_FIELDS",
    "RESUME_METADATA",
    "RESUME_POLICIES",
    "SECRET_FIELDS",
    "WARN",
    "RunArguments",
    "check_choice",
    "check_hub_model_id",
    "check_positive",
    "check_seed",
    "choice",
    "config_to_dict",
    "field_aliases",
    "load_config_file",
    "parse_config",
    "resume_changes",
    "resume_compare_as",
    "resume_incompatibilities",
    "resume_policy",
    "unknown_flags_message",
]
