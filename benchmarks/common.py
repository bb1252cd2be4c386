"""What every contender of the benchmark shares: thread settings, device syncs, timers, statistics."""

from __future__ import annotations

import os
import statistics
import time
from contextlib import contextmanager
from typing import Dict, List, Sequence

import torch


def set_threads(n: int) -> None:
    """The same intra-op thread count for every contender (and for OpenMP/MKL started later):
    oversubscribing a shared machine can slow torch 10x and would make the ratios meaningless."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    torch.set_num_threads(n)


def synchronize(device) -> None:
    """Wait for queued device work, so a timer measures the work and not its launch."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def reset_accelerate() -> None:
    """Forget Accelerate's process-wide singletons: each contender builds its own Accelerator."""
    from accelerate.state import AcceleratorState, GradientState, PartialState

    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    PartialState._reset_state()


class Stopwatch:
    """Seconds spent inside ``with watch:`` blocks, summed (to subtract I/O from a timed loop)."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, fn):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0

        return timed


@contextmanager
def timed(device, out: Dict[str, float], key: str = "seconds"):
    synchronize(device)
    t0 = time.perf_counter()
    yield
    synchronize(device)
    out[key] = time.perf_counter() - t0


def summary(values: Sequence[float]) -> Dict[str, object]:
    """Median and spread (min, max, and max-min relative to the median) of repeated figures."""
    values = list(values)
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return {"median": med, "min": lo, "max": hi, "spread": (hi - lo) / med if med else float("nan"), "values": values}


def ratios(numerators: List[float], denominators: List[float]) -> List[float]:
    """Per-repetition ratios: each pair ran back to back, so machine noise mostly cancels."""
    return [a / b for a, b in zip(numerators, denominators)]


class FrechetYardstick:
    """A yardstick of the panel (benchmarks/photos/panel.py) that compares images by the Fréchet distance
    of their :meth:`features` against a fixed real reference, next to its real-vs-real floor.
    Subclasses define ``name``, ``label`` and ``features``, then call :meth:`set_reference`."""

    name = ""
    label = ""
    resamples = 20  # bootstrap resamples of the generated features behind the interval

    def features(self, images: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def set_reference(self, reference: torch.Tensor, floor_images: torch.Tensor) -> None:
        """``reference`` and ``floor_images``: two disjoint sets of real images of the same size."""
        from gan_accel.metrics.bootstrap import mean_and_covariance

        self.real_stats = mean_and_covariance(self.features(reference))
        self.floor = self.distance(floor_images)["value"]

    def distance(self, images: torch.Tensor, resamples: int = 0) -> Dict[str, object]:
        """``{"value", "interval"}``: the distance and a bias-corrected bootstrap interval (None
        without ``resamples``) from resampling the generated features, on its own seeded stream."""
        import math

        from gan_accel.metrics.bootstrap import bias_corrected_interval, frechet_distance

        fake = self.features(images)
        if not torch.isfinite(fake).all():  # FID's eigen-solver crashes on non-finite input
            return {"value": float("nan"), "interval": None}
        value = frechet_distance(self.real_stats, fake)
        if not resamples:
            return {"value": value, "interval": None}
        gen = torch.Generator().manual_seed(0)
        draws = [
            frechet_distance(self.real_stats, fake[torch.randint(len(fake), (len(fake),), generator=gen)])
            for _ in range(resamples)
        ]
        return {"value": value, "interval": bias_corrected_interval(draws, value, bounds=(0.0, math.inf))}

    def score(self, images: torch.Tensor, interval: bool = True) -> Dict[str, object]:
        """``images``: as many as the floor's sets (the like-for-like size); ``interval``: also the
        bootstrap interval (``resamples`` more distances)."""
        out = self.distance(images, self.resamples if interval else 0)
        return {**out, "floor": self.floor, "x_floor": out["value"] / self.floor}
