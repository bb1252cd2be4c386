"""One phase's backward: its loss under autocast with its frozen networks frozen, the rule for
values shared between phases (a freed graph, weights stepped since), as one line, and the
warning for a phase that writes gradients into a trained network it neither trains nor freezes."""

from __future__ import annotations

import contextlib
from typing import Callable, Dict, Optional

import torch
from torch.autograd.graph import increment_version

from ..errors import UserError
from .recipe import Recipe
from .step import Step


def autocast(accelerator):
    """``accelerator.autocast()``, or a bare ``nullcontext`` when mixed precision is off: Accelerate
    would also return one then, after building its state and a generator-based context for each
    call (several times per update, as much as a small model's update costs in optimizer kernels)."""
    return accelerator.autocast() if accelerator.native_amp else contextlib.nullcontext()


def backward_phase(accelerator, phase, step: Step, frozen: Optional[list] = None) -> Dict[str, torch.Tensor]:
    """The phase's loss (under autocast) and its backward, with the parameters of its frozen
    networks frozen: the loss may run through them but must not write their gradients
    (accumulation would add those to their next update). Freezing a whole network is DDP-safe,
    and the gradient still flows through its activations. ``frozen``: the parameters to freeze
    (by default those of ``phase.frozen`` that train)."""
    if frozen is None:
        frozen = [q for n in phase.frozen for q in step.nets[n].parameters() if q.requires_grad]
    for q in frozen:
        q.requires_grad_(False)
    try:
        with autocast(accelerator):
            loss, metrics = phase.loss(step)
        try:
            accelerator.backward(loss, retain_graph=phase.retain_graph)
        except RuntimeError as err:
            raise shared_value_error(phase, err) from None
    finally:
        for q in frozen:
            q.requires_grad_(True)
    return metrics


def mark_stepped(optimizer) -> None:
    """Make autograd see an optimizer step as the in-place change it is: a fused step does not
    bump the parameters' version counters, so a later phase backpropagating through a value made
    with the old weights would silently get gradients of weights that no longer exist."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            increment_version(p)


# PyTorch's generic errors for the two ways a phase can misuse a value shared between phases.
_SECOND_BACKWARD = "backward through the graph a second time"
_STEPPED_SINCE = "modified by an inplace operation"


def shared_value_error(phase, err: RuntimeError) -> Exception:
    """The rule for values shared between phases, as one line naming the phase (other errors are
    returned unchanged). A value made in ``inputs`` may serve several phases, but:

    - a graph is freed by the first backward through it: a later phase that backpropagates through
      it again needs the earlier phase to declare ``Phase(..., retain_graph=True)`` (or to use a
      ``.detach()``-ed copy, when it needs no gradient into those networks);
    - an optimizer step changes its networks' weights in place: a phase cannot backpropagate
      through a value computed by networks an earlier phase of the same micro-batch stepped;
      compute that value inside the phase (a recompute) instead.
    """
    message = str(err)
    if _SECOND_BACKWARD in message:
        return UserError(
            f"recipe: phase {phase.name!r} backpropagates through a graph an earlier phase's backward "
            "already freed; declare retain_graph=True on the earlier phase, or detach the value there"
        )
    if _STEPPED_SINCE in message:
        return UserError(
            f"recipe: phase {phase.name!r} backpropagates through a value made before an earlier phase "
            "stepped the networks it came from; compute that value inside the phase instead of in inputs"
        )
    return err


_NOTHING = contextlib.nullcontext()


class GradientLeaks:
    """Warns, one line per (phase, network), when a phase's backward writes gradients into a network
    that another phase trains but this one neither trains nor freezes (a G phase whose loss runs
    through D, without ``frozen=["D"]``): nothing fails, but D's next update adds them to its own,
    so D trains silently wrong. Checked at each phase's first backward only: hooks on those
    networks' parameters, removed after it; later backwards pay one dict look-up."""

    def __init__(self, recipe: Recipe, nets, warn: Callable[[str], None]) -> None:
        self.warn = warn
        self.unchecked = {}
        for p in recipe.phases:
            others = [n for n in recipe.trained() if n not in p.trains and n not in p.frozen]
            if others:
                self.unchecked[p.name] = {n: nets[n] for n in others}

    def first_backward(self, phase: str):
        """The context to run the phase's backward in: the check at its first backward, then none."""
        networks = self.unchecked.pop(phase, None)
        return self._check(phase, networks) if networks else _NOTHING

    @contextlib.contextmanager
    def _check(self, phase: str, networks: Dict[str, torch.nn.Module]):
        written: Dict[str, None] = {}  # ordered: the networks in the order gradients reached them

        def recorder(name):
            def record(grad):
                written[name] = None

            return record

        handles = [
            q.register_hook(recorder(name))
            for name, net in networks.items()
            for q in net.parameters()
            if q.requires_grad
        ]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()
        for name in written:
            self.warn(
                f"warning: phase {phase!r} writes gradients into {name!r}, which it neither trains nor freezes: "
                f'{name!r} would add them to its next update; add frozen=["{name}"] to Phase({phase!r}, ...) '
                f"(or detach what the phase takes from {name!r})"
            )
