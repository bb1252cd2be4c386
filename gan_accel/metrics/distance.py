"""FID and KID between a fixed real reference and sets of images, computed by torchmetrics.

torchmetrics does the maths (``FrechetInceptionDistance`` and ``KernelInceptionDistance`` with
our feature network passed as ``feature=``, so nothing is downloaded); this class adds what an
evaluation loop needs around them: the real reference is fed once and kept across calls
(``reset_real_features=False``), it can be saved to and restored from a cache file, the feature
network runs once per batch for both metrics, and KID's random subsets are seeded without moving
the caller's RNG.
"""

from __future__ import annotations

import warnings
from typing import Dict, Iterable, Optional, Tuple

import torch
import torch.nn as nn

KID_SUBSET_SIZE = 1000  # the usual KID subset size (Binkowski et al.), reduced for small sets


class _OncePerBatch(nn.Module):
    """FID and KID each call their feature network on the same batch, one after the other; keep the
    last batch's features so the (possibly expensive) network runs once per batch."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net
        self.num_features = net.num_features  # read by FID instead of running a dummy image
        self._last: Optional[tuple] = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._last is None or self._last[0] is not x:
            self._last = (x, self.net(x))
        return self._last[1]

    def extract(self, x: torch.Tensor) -> torch.Tensor:
        """The features of ``x``; a metric update with this same tensor next reuses them."""
        return self.forward(x)

    def forget(self) -> None:
        self._last = None


def kid_subset_size(n_real: int, n_fake: int) -> int:
    """KID is averaged over random subsets; with fewer than 2 * 1000 images use half the smaller
    set, so that subsets differ and the reported std means something."""
    return max(2, min(KID_SUBSET_SIZE, min(n_real, n_fake) // 2))


class FeatureDistance:
    """FID and KID of image sets against one real reference.

    features:    nn.Module, float images [-1, 1] ``[B, C, H, W]`` -> float64 ``[B, D]``, with an int
                 ``num_features`` attribute.
    kid_subsets: number of random subsets KID is averaged over (its std is across them).
    seed:        seeds KID's subset sampling, so a repeated call on the same images gives the same value.
    """

    def __init__(
        self, features: nn.Module, kid_subsets: int = 50, seed: int = 0, device: Optional[torch.device] = None
    ) -> None:
        # imported on use: torchmetrics takes seconds to import (gan_accel.metrics says why that matters)
        from torchmetrics.image.fid import FrechetInceptionDistance
        from torchmetrics.image.kid import KernelInceptionDistance

        self.device = torch.device(device or "cpu")
        self.features = _OncePerBatch(features)
        self.seed = seed
        # sync_on_compute=False: an evaluation runs in one process (the trainer's main process);
        # a cross-process sync there would wait forever for the other ranks.
        common = dict(feature=self.features, reset_real_features=False, sync_on_compute=False)
        self.fid = FrechetInceptionDistance(**common).to(self.device)
        with warnings.catch_warnings():
            # "KID will save all extracted features in buffer": expected, our sets are small.
            warnings.simplefilter("ignore", UserWarning)
            self.kid = KernelInceptionDistance(subsets=kid_subsets, subset_size=KID_SUBSET_SIZE, **common).to(
                self.device
            )
        self.num_real = 0

    @torch.no_grad()
    def extract(self, batch: torch.Tensor) -> torch.Tensor:
        """Features of a batch already on :attr:`device`, computed once: when the same tensor is then
        yielded to :meth:`score`, FID and KID reuse them (the evaluator derives class predictions
        from the domain features this way instead of running the classifier twice)."""
        return self.features.extract(batch)

    @torch.no_grad()
    def _update(self, batch: torch.Tensor, real: bool) -> int:
        batch = batch.to(self.device)
        self.fid.update(batch, real=real)
        self.kid.update(batch, real=real)
        self.features.forget()
        return batch.shape[0]

    def set_reference(self, batches: Iterable[torch.Tensor]) -> None:
        """Feed the real reference images (float [-1, 1]) once; they are kept across :meth:`score` calls."""
        self.fid.reset_real_features = self.kid.reset_real_features = True
        self.fid.reset()
        self.kid.reset()
        self.fid.reset_real_features = self.kid.reset_real_features = False
        self.num_real = sum(self._update(b, real=True) for b in batches)

    def reference_state(self) -> Dict[str, torch.Tensor]:
        """The real-side states of both metrics (FID: feature sum, sum of outer products, count; KID:
        the features), on the CPU, for a cache file."""
        state = {f"fid.{k}": v.cpu() for k, v in self.fid.metric_state.items() if k.startswith("real_")}
        state["kid.real_features"] = torch.cat(self.kid.real_features).cpu()
        state["num_real"] = torch.tensor(self.num_real)
        return state

    def load_reference_state(self, state: Dict[str, torch.Tensor]) -> None:
        """Restore what :meth:`reference_state` returned (instead of :meth:`set_reference`)."""
        for key, value in state.items():
            if key.startswith("fid."):
                setattr(self.fid, key[4:], value.to(self.device))
        self.kid.real_features = [state["kid.real_features"].to(self.device)]
        self.num_real = int(state["num_real"])

    def reference_features(self) -> torch.Tensor:
        """The reference features ``[N, D]`` in the order they were fed (KID keeps them)."""
        return torch.cat(self.kid.real_features)

    def last_features(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(real [N, D], fake [M, D])``: the reference features and those of the last :meth:`score`
        call, for metrics computed in the same feature space."""
        return self.reference_features(), torch.cat(self.kid.fake_features)

    def score(self, batches: Iterable[torch.Tensor]) -> Dict[str, float]:
        """``{"fid", "kid_mean", "kid_std", "num_images"}`` of the images in ``batches`` against the reference."""
        if self.num_real < 2:
            raise RuntimeError("FeatureDistance.score needs a reference: call set_reference first")
        self.fid.reset()  # keeps the real side (reset_real_features=False)
        self.kid.reset()
        n = sum(self._update(b, real=False) for b in batches)
        if n < 2:
            raise ValueError(f"FID/KID need at least 2 images; got {n}")
        if not torch.isfinite(torch.cat(self.kid.fake_features)).all():
            # A diverged generator (NaN/inf images): LAPACK's eigenvalue solver behind FID crashes
            # the whole process on non-finite input (a segfault in MKL, no exception), so score NaN,
            # which the trainer never keeps as the best.
            nan = float("nan")
            return {"fid": nan, "kid_mean": nan, "kid_std": nan, "num_images": float(n)}
        self.kid.subset_size = kid_subset_size(self.num_real, n)
        fid = self.fid.compute()
        # KID draws its subsets with torch.randperm on the global CPU generator: seed it in a fork
        # so the value is reproducible and the caller's (trainer's) random stream does not move.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            kid_mean, kid_std = self.kid.compute()
        return {"fid": float(fid), "kid_mean": float(kid_mean), "kid_std": float(kid_std), "num_images": float(n)}
