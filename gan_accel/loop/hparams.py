"""Re-apply the current run's optimizer settings after a checkpoint is loaded.

``load_state`` restores each optimizer's ``param_groups`` (learning rate, betas, weight decay)
and each scheduler's ``base_lrs`` from the checkpoint, so a learning rate changed on resume would
be silently overwritten by the old one. :func:`snapshot` records the freshly built values (the
current config's) before loading; :func:`reapply` puts them back over the loaded ones, keeping
the loaded moment estimates and step counts, and recomputes each scheduler's current rate from
its (current) schedule at the restored position.
"""

from __future__ import annotations

from typing import List, Tuple

# Per-group settings that come from the config; everything else in a group is left as loaded.
_GROUP_KEYS = ("initial_lr", "betas", "weight_decay", "eps")


def _raw(obj, attr: str):
    return getattr(obj, attr, obj)  # Accelerate wraps optimizers (.optimizer) and schedulers (.scheduler)


def snapshot(accelerator) -> Tuple[list, list]:
    groups = [
        [{k: g[k] for k in (*_GROUP_KEYS, "lr") if k in g} for g in _raw(o, "optimizer").param_groups]
        for o in accelerator._optimizers
    ]
    base_lrs = [list(getattr(_raw(s, "scheduler"), "base_lrs", [])) for s in accelerator._schedulers]
    return groups, base_lrs


def reapply(accelerator, saved: Tuple[list, list]) -> None:
    groups, base_lrs = saved
    for opt, fresh_groups in zip(accelerator._optimizers, groups):
        for group, fresh in zip(_raw(opt, "optimizer").param_groups, fresh_groups):
            group.update({k: v for k, v in fresh.items() if k != "lr"})
            group["lr"] = fresh.get("initial_lr", fresh["lr"])  # overwritten below when a scheduler drives it
    for sched, fresh in zip(accelerator._schedulers, base_lrs):
        raw = _raw(sched, "scheduler")
        if not fresh or not hasattr(raw, "lr_lambdas"):
            continue
        raw.base_lrs = list(fresh)
        recompute_rates(raw)


def recompute_rates(raw) -> None:
    """A lambda scheduler's current rates from its base rates at its position (``last_epoch``)."""
    if not hasattr(raw, "lr_lambdas"):
        return
    lrs: List[float] = [base * fn(raw.last_epoch) for fn, base in zip(raw.lr_lambdas, raw.base_lrs)]
    for group, lr in zip(raw.optimizer.param_groups, lrs):
        group["lr"] = lr
    raw._last_lr = lrs
