"""Adaptive discriminator augmentation (Karras et al. 2020, "Training GANs with limited data").

D overfits a small dataset: it grows confident on the real images it has memorised, and the
share of real images it calls real, ``r_t = E[sign(D(real))]``, climbs towards 1. ADA watches
``r_t`` and moves the augmentation probability ``p`` to hold it at a target (0.6 in the paper):
up when D overfits, down when it does not. The step is sized in images, so that ``p`` can go from
0 to 1 in ``kimg`` thousand real images (500 in the paper, for runs of tens of millions of
images; our runs see tens of thousands, hence a config field).

The same ``p`` on every process: the sums behind ``r_t`` are reduced across processes before each
adjustment, so every rank computes the same update from the same numbers. ``p`` and the running
sums are saved in every checkpoint (``ada.safetensors``), so a resumed run adjusts exactly as the
uninterrupted one did.
"""

from __future__ import annotations

from typing import Dict

import torch


def adjusted_p(p: float, r_t: float, target: float, images: float, kimg: float) -> float:
    """One ADA step: ``p + sign(r_t - target) * images / (kimg * 1000)``, kept in [0, 1]."""
    direction = (r_t > target) - (r_t < target)
    return min(1.0, max(0.0, p + direction * images / (kimg * 1000.0)))


class AdaptiveAugment:
    """Holds ``p``; :meth:`observe` takes D's real logits of each D step (on the device, no host
    sync), :meth:`adjust` (every ``interval`` G updates, on every rank) moves ``p``."""

    def __init__(self, target: float, kimg: float, interval: int, device: torch.device, p: float = 0.0) -> None:
        self.target = target
        self.kimg = kimg
        self.interval = interval
        self.device = device
        self.p = p
        self.last_r_t = 0.0  # finite: every checkpointed tensor must be (the non-finite guard)
        self.sign_sum = torch.zeros((), dtype=torch.float64, device=device)
        self.count = torch.zeros((), dtype=torch.float64, device=device)

    def observe(self, mean_sign: torch.Tensor, count: int) -> None:
        """``mean_sign``: ``sign(D(real)).mean()`` over ``count`` real images of one D step."""
        self.sign_sum += mean_sign.detach().double() * count
        self.count += count

    def due(self, step: int) -> bool:
        return step % self.interval == 0

    def adjust(self, accelerator) -> float:
        """Move ``p`` from the real logits seen since the last call (all processes); returns r_t."""
        totals = torch.stack([self.sign_sum, self.count])
        if accelerator.num_processes > 1:
            totals = accelerator.reduce(totals, reduction="sum")
        sign_sum, count = totals.tolist()  # one host sync per `interval` G updates
        self.sign_sum.zero_()
        self.count.zero_()
        if count == 0:
            return self.last_r_t
        self.last_r_t = sign_sum / count
        self.p = adjusted_p(self.p, self.last_r_t, self.target, count, self.kimg)
        return self.last_r_t

    def state_dict(self) -> Dict[str, torch.Tensor]:
        return {
            "p": torch.tensor(self.p, dtype=torch.float64),
            "last_r_t": torch.tensor(self.last_r_t, dtype=torch.float64),
            "sign_sum": self.sign_sum.clone(),
            "count": self.count.clone(),
        }

    def load_state_dict(self, state: Dict[str, torch.Tensor]) -> None:
        self.p = float(state["p"])
        self.last_r_t = float(state["last_r_t"])
        self.sign_sum = state["sign_sum"].to(self.device, torch.float64)
        self.count = state["count"].to(self.device, torch.float64)
