"""The loop's counters: everything besides model/optimizer/scheduler state that a resume needs."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass
class TrainState:
    step: int = 0              # optimizer updates done (G updates on the GAN path)
    micro_step: int = 0        # batches consumed since the start (drives per-step noise seeds)
    epoch: int = 0             # current pass over the data
    epoch_start: int = 0       # samples (over all processes) of this epoch already consumed
    nonfinite_total: int = 0   # updates skipped for non-finite losses/gradients
    nonfinite_streak: int = 0  # consecutive skipped updates
    d_updates: int = 0         # D optimizer updates (GAN path: decides which windows train G)
    best_metric: float = float("nan")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "TrainState":
        # None is how a non-finite value (best_metric before any evaluation) is stored in JSON.
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names and v is not None})
