"""The GAN as a recipe on the engine: two networks, two optimizers, two phases.

networks   G (optimizer G), D (optimizer D)
phases     D: every update window            loss: D's loss (+ GP, + lazy R1, + reconstruction)
           G: after every n_critic-th D update, D frozen     loss: G's loss through D
inputs     real images and labels of the batch, z for the global batch, one G forward
           (kept with a graph only in windows where G trains), DiffAugment seeded per step
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Tuple

import torch

from ..engine import LRSchedule, Network, Optimizer, Phase, RandomStreams, Recipe, adam
from . import step as phases
from .ada import AdaptiveAugment
from .augment import make_augment, parse_ada_transforms, parse_policy
from .config import GANTrainArguments

# The recipe's random streams by position: positional seeds (see RandomStreams) keep the draws of
# the first GAN runs, so recorded results still reproduce ("labels" is reserved); "ada" (adaptive
# augmentation's gates and parameters) came later, last, so no seed moved; then "recon" (the
# quadrant each real image's reconstruction rebuilds, --arch fastgan).
STREAMS = {"z": 0, "labels": 1, "gp_alpha": 2, "augment": 3, "ada": 4, "recon": 5}


# A batch of the prepared loader -> (float images in [-1, 1] on the device, int64 labels or None).
RealBatch = Callable[[Any], Tuple[torch.Tensor, Optional[torch.Tensor]]]


def progressive_alpha(step: int, length: int, share: float, fade: float) -> float:
    """The full-size weight of a progressive run at G update ``step`` of ``length``: 0 for the
    first ``share`` of the run (half size only), a linear fade over the next ``fade``, 1 after.
    The fade ends by the last update at the latest, so a finished run exports full-size G."""
    if share <= 0:
        return 1.0
    start = share * length
    end = min(start + fade * length, length - 1)
    if step >= end:
        return 1.0
    if step <= start:
        return 0.0
    return (step - start) / (end - start)


def next_alpha(current: float, step: int, length: int, share: float, fade: float) -> float:
    """Never back down: a --time_budget run re-plans its length as it goes, and a longer plan
    would otherwise return a faded-in G to half size."""
    return max(current, progressive_alpha(step, length, share, fade))


class GANRecipe:
    def __init__(
        self,
        train: GANTrainArguments,
        real_batch: RealBatch,
        noise: RandomStreams,
        z_dim: int,
        conditional: bool = False,
        ada: Optional[AdaptiveAugment] = None,
        schedule_length: Optional[Callable[[], int]] = None,
        progressive: Tuple[float, float] = (0.0, 0.0),
        reconstructs: bool = False,
    ) -> None:
        """``real_batch``: the data's reader of a loader batch (``ImageSource.real_batch``: a
        gather from the device tensor in memory, the workers' uint8 batch when streamed); its
        labels are used only when ``conditional``. ``ada``: adaptive augmentation (its p is read
        at each step); ``schedule_length``: the run's length in G updates, read at each update (a
        --time_budget run learns it only after measuring itself); None: --max_steps.
        ``progressive``: (share, fade) of a progressive run (the networks' ``alpha``); share 0: off.
        ``reconstructs``: D rebuilds its real inputs (FastGAN's D), weighted by --recon_weight."""
        self.train_args = train
        self.real_batch = real_batch
        self.noise = noise
        self.z_dim = z_dim
        self.conditional = conditional
        self.policy = parse_policy(train.diffaugment)
        self.ada = ada
        self.ada_transforms = parse_ada_transforms(train.ada_transforms)
        self.schedule_length = schedule_length
        self.progressive = progressive
        self.networks: Mapping[str, torch.nn.Module] = {}
        self._alpha: Optional[float] = None  # the buffers' value once read (after a resume has loaded them)
        self.reconstructs = reconstructs and train.recon_weight > 0

    def recipe(self, networks: Mapping[str, torch.nn.Module]) -> Recipe:
        self.networks = networks  # unwrapped: where the progressive alpha buffers are set
        t = self.train_args
        n = self.train_args.d_steps_per_g_step
        betas = (t.adam_beta1, t.adam_beta2)
        # In run steps: the engine stretches D's.
        schedule = LRSchedule(t.lr_scheduler, t.warmup_steps, t.max_steps, length=self.schedule_length)
        return Recipe(
            networks=[Network("G", networks["G"], optimizer="G"), Network("D", networks["D"], optimizer="D")],
            optimizers=[Optimizer("G", adam(t.lr_g, betas), schedule), Optimizer("D", adam(t.lr_d, betas), schedule)],
            phases=[
                Phase("D", trains=["D"], loss=self.d_phase),
                Phase("G", trains=["G"], frozen=["D"], loss=self.g_phase, every=n, offset=n - 1),
            ],
            progress="G",
            inputs=self.inputs,
        )

    def set_alpha(self, step: int) -> None:
        """The progressive blend of this step, before its forwards, on G and D alike. Kept in G's
        buffer (so in checkpoints): a resumed run continues from the same value."""
        share, fade = self.progressive
        length = self.schedule_length() if self.schedule_length is not None else self.train_args.max_steps
        G, D = self.networks["G"], self.networks["D"]
        current = float(G.alpha) if self._alpha is None else self._alpha  # one read, not one per step
        alpha = next_alpha(current, step, length, share, fade)
        if alpha != self._alpha:
            G.alpha.fill_(alpha)
            D.alpha.fill_(alpha)
            self._alpha = alpha

    def inputs(self, s) -> dict:
        if self.progressive[0] > 0:
            self.set_alpha(s.updates.get("G", 0))
        real, labels = self.real_batch(s.batch)
        labels = labels if self.conditional else None
        z = self.noise.normal("z", s.micro_step, self.z_dim)
        # DiffAugment: re-seeded per call, so real, fake and the penalties' inputs of this step get
        # the same transforms; seeded by the micro-step, so a resumed run draws the same ones.
        micro = s.micro_step
        # ADA's p is fixed for the step (real and fake alike) and its draws have their own stream.
        augment = make_augment(
            self.policy,
            lambda: self.noise.generator("augment", micro),
            self.ada.p if self.ada is not None else 0.0,
            self.ada_transforms,
            lambda: self.noise.generator("ada", micro),
        )
        with torch.set_grad_enabled(s.runs("G")):  # one G forward serves both phases
            fake = s.nets.G(z, labels)
        return {"real": real, "labels": labels, "fake": fake, "augment": augment}

    def d_phase(self, s):
        t = self.train_args
        alpha = self.noise.uniform("gp_alpha", s.micro_step, 1, 1, 1) if t.loss == "wgan_gp" else None
        # Lazy R1 (StyleGAN2): on every k-th D update only, weighted by k to keep its strength.
        lazy_r1 = t.r1_gamma > 0 and s.updates.get("D", 0) % t.r1_interval == 0
        # Drawn per micro-step from the seeded stream, so a resumed run rebuilds the same quadrants.
        quadrants = self.noise.categorical("recon", s.micro_step, 4) if self.reconstructs else None
        loss, metrics = phases.d_loss(
            s.nets.D,
            s["real"],
            s["fake"],
            s["labels"],
            t.loss,
            gp_weight=t.gp_weight if t.loss == "wgan_gp" else 0.0,
            gp_alpha=alpha,
            r1_weight=t.r1_gamma / 2 * t.r1_interval if lazy_r1 else 0.0,
            augment=s["augment"],
            scaler=s.accelerator.scaler,
            recon_quadrants=quadrants,
            recon_weight=t.recon_weight,
        )
        if self.ada is not None:  # ADA watches D's verdict on the reals it trains on
            self.ada.observe(metrics["D/real_sign"], s["real"].shape[0])
            metrics["aug/p"] = torch.tensor(self.ada.p)
            metrics["aug/rt"] = metrics["D/real_sign"]
        if self.progressive[0] > 0:
            metrics["progressive/alpha"] = self.networks["D"].alpha.clone()  # 0: half size, 1: full size
        return loss, metrics

    def g_phase(self, s):
        return phases.g_loss(s.nets.D, s["fake"], s["labels"], self.train_args.loss, augment=s["augment"])
