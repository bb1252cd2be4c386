"""The multi-network training engine: recipes declare networks, optimizers and phases; the
engine owns the loop (see docs/engine.md)."""
from .cadence import BestKeeper, Hook
from .engine import Engine, backward_phase
from .optim import adam, build_scheduler, fused_or_foreach, parameters_of
from .prepare import PER_NETWORK, SINGLE_CALL, plan_for, prepare_recipe
from .recipe import LRSchedule, Network, Optimizer, Phase, Recipe
from .step import Step
from .update import apply_update

__all__ = [
    "BestKeeper", "Engine", "Hook", "LRSchedule", "Network", "Optimizer", "PER_NETWORK", "Phase", "Recipe", "SINGLE_CALL",
    "Step", "adam", "backward_phase", "apply_update", "build_scheduler", "fused_or_foreach", "parameters_of", "plan_for", "prepare_recipe",
]
