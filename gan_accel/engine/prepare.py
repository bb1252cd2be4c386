"""The prepare plan: how a recipe's networks, optimizers, schedulers and loaders go through
``accelerator.prepare``, by distributed strategy.

- A single device and DDP: ONE ``prepare`` call for every trained network, optimizer,
  scheduler and loader, in declaration order. That order is the checkpoint layout
  (``save_state`` names files ``model``, ``model_1``, ``optimizer``, ... positionally).
- FSDP2: ``prepare`` accepts one model per call, together with its optimizer (FSDP2 rewrites
  the parameters, and the optimizer must be re-pointed at the sharded ones), so one call per
  (network, optimizer, scheduler), then one for the loaders.
- DeepSpeed (one model per ``Accelerator``) and FSDP1: refused.

Networks that never train are placed with ``prepare_model(evaluation_mode=True)``: DDP refuses
to wrap a module without trainable parameters, and it needs no wrapper.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

from accelerate.utils import DistributedType

from ..errors import ConfigError
from .recipe import Recipe

SINGLE_CALL = "single_call"
PER_NETWORK = "per_network"


def plan_for(accelerator) -> str:
    kind = accelerator.distributed_type
    if kind == DistributedType.DEEPSPEED:
        raise ConfigError(
            "DeepSpeed is not supported for multi-network training (one model per Accelerator); "
            "use FSDP2 (accelerate config: fsdp_version 2) or DDP"
        )
    if kind == DistributedType.FSDP:
        if not getattr(accelerator, "is_fsdp2", False):
            raise ConfigError(
                "FSDP1 is not supported for multi-network training; use FSDP2 "
                "(accelerate config: fsdp_version 2) or DDP"
            )
        return PER_NETWORK
    return SINGLE_CALL


@dataclass
class Prepared:
    nets: Dict[str, object] = field(default_factory=dict)  # prepared modules (DDP-wrapped when trained)
    optimizers: Dict[str, object] = field(default_factory=dict)  # AcceleratedOptimizer by name
    schedulers: Dict[str, object] = field(default_factory=dict)  # AcceleratedScheduler by optimizer name
    loaders: List[object] = field(default_factory=list)
    model_order: List[str] = field(default_factory=list)  # save_state's model, model_1, ... in this order
    plan: str = SINGLE_CALL


def prepare_recipe(accelerator, recipe: Recipe, optimizers: dict, schedulers: dict, loaders: list) -> Prepared:
    """``optimizers``/``schedulers``: raw objects by optimizer name; ``loaders``: raw dataloaders."""
    out = Prepared(plan=plan_for(accelerator))
    trained = recipe.trained()
    names = [o.name for o in recipe.optimizers]
    if out.plan == SINGLE_CALL:
        objs = accelerator.prepare(
            *(recipe.network(n).module for n in trained),
            *(optimizers[k] for k in names),
            *(schedulers[k] for k in names),
            *loaders,
        )
        objs = list(objs) if isinstance(objs, (list, tuple)) else [objs]
        k = len(trained)
        o = len(names)
        out.nets.update(zip(trained, objs[:k]))
        out.optimizers.update(zip(names, objs[k : k + o]))
        out.schedulers.update(zip(names, objs[k + o : k + 2 * o]))
        out.loaders = objs[k + 2 * o :]
        out.model_order = list(trained)
    else:
        for name in names:
            nets = recipe.networks_of(name)
            if len(nets) != 1:
                raise ConfigError(
                    f"FSDP2 prepares one network per optimizer; optimizer {name!r} updates {nets}: "
                    "give each network its own optimizer, or use DDP"
                )
            out.nets[nets[0]], out.optimizers[name], out.schedulers[name] = accelerator.prepare(
                recipe.network(nets[0]).module, optimizers[name], schedulers[name]
            )
            out.model_order.append(nets[0])
        if loaders:
            prepared = accelerator.prepare(*loaders)
            out.loaders = list(prepared) if isinstance(prepared, (list, tuple)) else [prepared]
    for net in recipe.networks:
        if net.optimizer is None:
            net.module.requires_grad_(False)  # it never trains: no gradients are computed for it
            out.nets[net.name] = accelerator.prepare_model(net.module, evaluation_mode=True)
            out.model_order.append(net.name)
    return out
