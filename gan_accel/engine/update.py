"""The update function every optimizer goes through: device-side finite check, fused skip,
scheduler tick, zero_grad."""

from __future__ import annotations

from typing import Optional

import torch
from accelerate.optimizer import AcceleratedOptimizer
from accelerate.utils import DistributedType

from ..loop.guard import all_finite


def plain_step(optimizer) -> Optional[torch.optim.Optimizer]:
    """The torch optimizer under a prepared one when Accelerate's wrapper would only forward to
    it (no GradScaler, no XLA, not a DeepSpeed or other subclass), else None. Accelerate's
    ``step()`` looks for an optional package on disk at each call and its ``zero_grad()`` inspects
    a signature: about 0.3 ms per update of two optimizers on a CPU, a tenth of a small model's
    update. The engine only calls these on sync steps, where the wrapper forwards them as is."""
    if type(optimizer) is not AcceleratedOptimizer:
        return None
    if optimizer.scaler is not None or optimizer.accelerator_state.distributed_type == DistributedType.XLA:
        return None
    return optimizer.optimizer


def gradients_of(optimizer) -> list:
    return [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]


def found_nonfinite(grads: list) -> torch.Tensor:
    """1.0 if any element of ``grads`` is inf or NaN, else 0.0 (0-dim): the ``found_inf`` a fused
    optimizer takes, from one vectorised pass. It is the check GradScaler makes while it
    unscales, here with a scale of 1 (``x * 1 == x``: the gradients keep every bit); a norm would
    cost several times more on a small model, and overflow on large finite gradients."""
    if not grads or any(g.is_sparse for g in grads) or len({g.device for g in grads}) > 1:
        return (~all_finite(grads)).float()
    device = grads[0].device
    found_inf = torch.zeros(1, device=device)
    with torch.no_grad():
        torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, torch.ones((), device=device))
    return found_inf.view(())  # 0-dim, as the optimizers' step counts it is subtracted from


def apply_update(
    accelerator,
    optimizer,
    scheduler,
    check_finite: bool,
    finite: Optional[torch.Tensor] = None,
    max_grad_norm: float = 0.0,
    agree_across_ranks: bool = False,
) -> Optional[torch.Tensor]:
    """Step ``optimizer`` and its scheduler on a sync step; skip the update if its gradients are
    not finite (checked after DDP's all-reduce, so every rank agrees).

    Returns None on accumulation micro-steps (prepared optimizers ignore step()/zero_grad()
    then), else a 0-dim bool tensor on the device: were the gradients finite. With a fused
    optimizer the skip happens on the device (the ``found_inf`` input GradScaler also uses: the
    kernel leaves weights, moments and step count untouched), so there is no host sync here;
    other optimizers need one ``bool()``. Under fp16 the GradScaler finds and skips inf/NaN itself.
    ``finite``: the verdict when the caller already has it (e.g. agreed across ranks).
    ``max_grad_norm > 0`` clips first; the global norm is finite iff every gradient is, so it
    doubles as the check (clipped non-finite gradients stay non-finite).
    ``agree_across_ranks``: vote (any rank non-finite -> every rank skips), for when gradients are
    not all-reduced (local SGD) and ranks could otherwise disagree.
    """
    if not accelerator.sync_gradients:
        return None
    if max_grad_norm > 0:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        norm = accelerator.clip_grad_norm_(params, max_grad_norm)
        if finite is None and norm is not None:
            finite = torch.isfinite(norm)
    found_inf = None
    if check_finite and finite is None:
        found_inf = found_nonfinite(gradients_of(optimizer))
        finite = found_inf == 0
    elif not check_finite:
        finite = None
    if agree_across_ranks and finite is not None:
        finite = accelerator.reduce((~finite).float().reshape(1).to(accelerator.device), reduction="sum")[0] == 0
        found_inf = None
    raw = getattr(optimizer, "optimizer", optimizer)
    stepper = plain_step(optimizer) or optimizer
    if finite is not None and raw.defaults.get("fused"):
        raw.found_inf = (~finite).float() if found_inf is None else found_inf
        stepper.step()
        raw.found_inf = None
    elif finite is not None and not bool(finite):
        stepper.zero_grad(set_to_none=True)
        return finite
    else:
        stepper.step()
    scheduler.step()  # also on a device-side skip: the schedule follows the updates attempted
    stepper.zero_grad(set_to_none=True)
    return finite if finite is not None else torch.ones((), dtype=torch.bool, device=accelerator.device)
