"""What a recipe declares: networks, optimizers (one may serve several networks), learning-rate
schedules, and the phases of an update. Plain data, validated once; the engine runs it.

A recipe reads like a phase list::

    Recipe(networks=[Network("G", G, optimizer="G"), Network("D", D, optimizer="D")],
           optimizers=[Optimizer("G", adam(2e-4)), Optimizer("D", adam(2e-4))],
           phases=[Phase("D", trains=["D"], loss=d_loss),
                   Phase("G", trains=["G"], frozen=["D"], loss=g_loss)],
           progress="G")
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn as nn

from ..errors import ConfigError

LossFn = Callable[[Any], Tuple[torch.Tensor, Dict[str, torch.Tensor]]]
SCHEDULES = {"constant": "constant_with_warmup", "linear": "linear", "cosine": "cosine"}


@dataclass
class LRSchedule:
    """A learning-rate schedule counted in run steps (updates of the recipe's ``progress``
    optimizer). The engine converts it for each optimizer: stretched by how many updates that
    optimizer makes per run step (from its phases' ``every``), then into scheduler ticks (a
    prepared scheduler ticks once per process per update)."""

    kind: str = "constant"  # constant (with warm-up) | linear | cosine: transformers.get_scheduler's curves; or custom
    warmup_updates: int = 0  # linear warm-up from 0 over this many updates
    total_updates: int = 0  # where linear/cosine reach 0 (unused by constant)
    factor: Optional[Callable[[int], float]] = None  # custom: the multiplier of the initial rate after n updates
    # The length in run steps, read at every tick instead of total_updates: a run that learns its
    # length while training (--time_budget) ends its linear/cosine curve with its last step.
    length: Optional[Callable[[], int]] = None

    def __post_init__(self) -> None:
        if self.kind == "custom":
            if self.factor is None:
                raise ConfigError("a custom learning-rate schedule needs factor(updates) -> multiplier")
        elif self.kind not in SCHEDULES:
            raise ConfigError(f"learning-rate schedule must be one of {', '.join(SCHEDULES)}; got {self.kind!r}")

    def scaled(self, ratio: float) -> "LRSchedule":
        """The same curve counted in updates of an optimizer that updates ``ratio`` times per run step."""
        if ratio == 1:
            return self
        if self.kind == "custom":
            factor = self.factor
            return LRSchedule("custom", factor=lambda updates: factor(updates / ratio))
        length = self.length
        scaled_length = None if length is None else (lambda: round(length() * ratio))
        return LRSchedule(
            self.kind, round(self.warmup_updates * ratio), round(self.total_updates * ratio), length=scaled_length
        )


@dataclass
class Optimizer:
    """An optimizer over the parameters of every network that names it."""

    name: str
    make: Callable[[List[nn.Module]], torch.optim.Optimizer]  # raw modules, in declaration order -> optimizer
    schedule: LRSchedule = field(default_factory=LRSchedule)
    max_grad_norm: float = 0.0  # > 0: clip the global norm of its gradients before each update
    # Ranks vote on skipping a non-finite update (any rank non-finite -> every rank skips): for
    # when gradients are not all-reduced (local SGD) and ranks could otherwise disagree.
    agree_across_ranks: bool = False


@dataclass
class Network:
    """A named network. ``optimizer=None``: it never trains (a teacher, a feature extractor)."""

    name: str
    module: nn.Module
    optimizer: Optional[str] = None


@dataclass
class Phase:
    """One backward pass of an update window, then a step of the optimizers of ``trains``.

    ``loss(step) -> (loss, metrics)``; ``frozen`` networks get ``requires_grad_(False)`` around
    the loss and its backward (the loss may run through them without writing their gradients).
    The phase runs in update windows ``w`` with ``w % every == offset`` (a window is one
    optimizer-update's worth of micro-batches), e.g. G after every n-th D update:
    ``every=n, offset=n - 1``.

    Values shared between phases (the recipe's ``inputs``): a phase may backpropagate through
    them when no earlier phase of the micro-batch freed their graph (``retain_graph=True`` on the
    earlier phase keeps it) or stepped the networks that made them (then compute the value inside
    the phase). Breaking either rule stops the run with one line naming the phase.
    """

    name: str
    trains: Sequence[str]
    loss: LossFn
    frozen: Sequence[str] = ()
    every: int = 1
    offset: int = 0
    retain_graph: bool = False  # keep the graph after this phase's backward, for a later phase

    def runs_in(self, window: int) -> bool:
        return window % self.every == self.offset


@dataclass
class Recipe:
    networks: List[Network]
    optimizers: List[Optimizer]
    phases: List[Phase]
    progress: str  # the optimizer whose updates are the run's steps (--max_steps counts them)
    inputs: Optional[Callable[[Any], dict]] = None  # per micro-batch, before the phases: values they share

    def __post_init__(self) -> None:
        nets = [n.name for n in self.networks]
        opts = [o.name for o in self.optimizers]
        for kind, names in (("network", nets), ("optimizer", opts), ("phase", [p.name for p in self.phases])):
            if len(set(names)) != len(names):
                raise ConfigError(f"recipe: duplicate {kind} names in {names}")
        for n in self.networks:
            if n.optimizer is not None and n.optimizer not in opts:
                raise ConfigError(
                    f"recipe: network {n.name!r} names unknown optimizer {n.optimizer!r} (known: {opts})"
                )
        for o in self.optimizers:
            if not self.networks_of(o.name):
                raise ConfigError(f"recipe: optimizer {o.name!r} updates no network")
        if self.progress not in opts:
            raise ConfigError(f"recipe: progress optimizer {self.progress!r} is not one of {opts}")
        for p in self.phases:
            self._check_phase(p, nets)

    def _check_phase(self, p: Phase, nets: List[str]) -> None:
        for name in (*p.trains, *p.frozen):
            if name not in nets:
                raise ConfigError(f"recipe: phase {p.name!r} names unknown network {name!r} (known: {nets})")
        for name in p.trains:
            opt = self.network(name).optimizer
            if opt is None:
                raise ConfigError(f"recipe: phase {p.name!r} trains {name!r}, which has no optimizer")
            missing = [n for n in self.networks_of(opt) if n not in p.trains]
            if missing:
                # Stepping a shared optimizer updates all of its networks: the phase must say so.
                raise ConfigError(
                    f"recipe: phase {p.name!r} steps optimizer {opt!r}, which also updates {missing}: "
                    "list them in trains"
                )
        if p.every < 1 or not 0 <= p.offset < p.every:
            raise ConfigError(f"recipe: phase {p.name!r} needs every >= 1 and 0 <= offset < every")

    def network(self, name: str) -> Network:
        return next(n for n in self.networks if n.name == name)

    def networks_of(self, optimizer: str) -> List[str]:
        return [n.name for n in self.networks if n.optimizer == optimizer]

    def optimizers_of(self, phase: Phase) -> List[str]:
        """The optimizers a phase steps, in declaration order."""
        wanted = {self.network(n).optimizer for n in phase.trains}
        return [o.name for o in self.optimizers if o.name in wanted]

    def updates_per_step(self, optimizer: str) -> float:
        """Updates of ``optimizer`` per update of ``progress``, from the phases' cadence."""

        def rate(name: str) -> float:
            return sum(1 / p.every for p in self.phases if name in self.optimizers_of(p))

        progress = rate(self.progress)
        if progress == 0:
            raise ConfigError(f"recipe: no phase steps the progress optimizer {self.progress!r}")
        return rate(optimizer) / progress

    def trained(self) -> List[str]:
        return [n.name for n in self.networks if n.optimizer is not None]

    def signature(self) -> dict:
        """What a checkpoint must match to be resumed by this recipe (names, order, roles)."""
        return {
            "networks": [[n.name, n.optimizer] for n in self.networks],
            "optimizers": [o.name for o in self.optimizers],
            "phases": [[p.name, list(p.trains), list(p.frozen), p.every, p.offset] for p in self.phases],
            "progress": self.progress,
        }
