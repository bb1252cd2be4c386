"""The multi-network training engine: recipes declare networks, optimizers and phases; the
engine owns the loop (see docs/engine.md). ``__all__`` is what a recipe author writes with; the
runner (:mod:`gan_accel.runner`) builds the :class:`Engine` itself."""

from .cadence import AFTER_CHECKPOINT, BEFORE_SAVE, STEP, UPDATE, BestKeeper, Hook, State

# The machinery, importable for the runner, benchmarks and tests (not recipe vocabulary).
from .engine import Engine, backward_phase  # noqa: F401,E402
from .optim import adam, build_scheduler, fused_or_foreach, parameters_of  # noqa: F401,E402
from .prepare import PER_NETWORK, SINGLE_CALL, plan_for, prepare_recipe  # noqa: F401,E402
from .recipe import LRSchedule, Network, Optimizer, Phase, Recipe
from .step import Step
from .streams import RandomStreams
from .update import apply_update  # noqa: F401,E402

__all__ = [
    "AFTER_CHECKPOINT",
    "BEFORE_SAVE",
    "STEP",
    "UPDATE",
    "BestKeeper",
    "Hook",
    "LRSchedule",
    "Network",
    "Optimizer",
    "Phase",
    "RandomStreams",
    "Recipe",
    "State",
    "Step",
    "adam",
    "parameters_of",
]
