"""What a resume may change: each field's policy (FREE, WARN, REFUSE from its metadata) and the
differences between a checkpoint's config and the resuming run's, refused or allowed with a warning."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Optional, Tuple, Type

from .fields import FREE, REFUSE, RESUME_POLICIES, WARN
from .run import RunArguments

# Renamed fields: a checkpoint written before the rename records the old name.
RENAMED_FIELDS = {"num_warmup_steps": "warmup_steps", "eval_steps": "eval_every"}


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
