"""CycleGAN as a recipe on the engine: four networks, three optimizers, two phases.

    networks    G_AB, G_BA (one Adam "G" over both, as the reference), D_A (Adam "D_A"), D_B (Adam "D_B")
    inputs      real_A, real_B (random crop/flip), fake_B = G_AB(real_A), rec_A = G_BA(fake_B),
                fake_A = G_BA(real_B), rec_B = G_AB(fake_A): one forward serves both phases
    phase G     trains G_AB, G_BA; D_A, D_B frozen
                loss = adv(D_B(fake_B)) + adv(D_A(fake_A)) + cycle_A + cycle_B + idt_A + idt_B
    phase D     trains D_A, D_B; each on real vs a fake from its image pool, loss halved

D_A judges domain A (real_A vs G_BA's fakes), D_B domain B. ``idt_A`` is G_BA fed an A image
(the generator INTO A should leave it alone), ``cycle_A`` is A -> B -> A.
"""

from __future__ import annotations

from typing import Dict, Mapping

import torch

from ..data import to_float_images
from ..engine import LRSchedule, Network, Optimizer, Phase, RandomStreams, Recipe, adam
from .config import CycleGANDataArguments, CycleGANTrainArguments
from .data import random_crop_flip
from .losses import cycle_loss, discriminator_loss, generator_adversarial_loss, identity_loss
from .pool import ImagePool

# The per-step random draws: the crop and flip of each domain's images, at the positions the first
# CycleGAN runs drew them from (so a run, and an older checkpoint's continuation, crop as before).
STREAMS = {"crop_A": 5, "crop_B": 6}


class CycleGANRecipe:
    def __init__(
        self,
        train: CycleGANTrainArguments,
        data: CycleGANDataArguments,
        images_a: torch.Tensor,
        images_b: torch.Tensor,
        noise: RandomStreams,
        pools: Dict[str, ImagePool],
        accelerator,
        schedule: LRSchedule,
    ) -> None:
        """``images_a``/``images_b``: uint8 ``[N, C, L, L]`` on the device (a batch indexes them);
        ``pools``: the image histories of D_A and D_B, identical on every process."""
        self.train_args = train
        self.data_args = data
        self.images_a = images_a
        self.images_b = images_b
        self.noise = noise
        self.pools = pools
        self.accelerator = accelerator
        self.schedule = schedule

    def recipe(self, networks: Mapping[str, torch.nn.Module]) -> Recipe:
        adam_ = adam(self.train_args.lr, (self.train_args.adam_beta1, self.train_args.adam_beta2))
        schedule = self.schedule
        return Recipe(
            networks=[
                Network("G_AB", networks["G_AB"], optimizer="G"),
                Network("G_BA", networks["G_BA"], optimizer="G"),
                Network("D_A", networks["D_A"], optimizer="D_A"),
                Network("D_B", networks["D_B"], optimizer="D_B"),
            ],
            optimizers=[
                Optimizer("G", adam_, schedule),
                Optimizer("D_A", adam_, schedule),
                Optimizer("D_B", adam_, schedule),
            ],
            phases=[
                Phase("G", trains=["G_AB", "G_BA"], frozen=["D_A", "D_B"], loss=self.generator_phase),
                Phase("D", trains=["D_A", "D_B"], loss=self.discriminator_phase),
            ],
            progress="G",
            inputs=self.inputs,
        )

    def real_images(self, images: torch.Tensor, idx: torch.Tensor, micro_step: int, stream: str) -> torch.Tensor:
        """The batch's images, randomly cropped and flipped; the draws are per sample of the GLOBAL
        batch and seeded by the micro-step, so 1 or N processes and a resumed run crop alike."""
        x = to_float_images(images[idx])
        if x.shape[-1] == self.data_args.image_size and not self.data_args.flip:
            return x
        u = self.noise.uniform(stream, micro_step, 3)
        return random_crop_flip(x, self.data_args.image_size, u, self.data_args.flip)

    def inputs(self, s) -> dict:
        idx_a, idx_b = s.batch
        real_a = self.real_images(self.images_a, idx_a, s.micro_step, "crop_A")
        real_b = self.real_images(self.images_b, idx_b, s.micro_step, "crop_B")
        fake_b = s.nets.G_AB(real_a)
        fake_a = s.nets.G_BA(real_b)
        return {
            "real_A": real_a,
            "real_B": real_b,
            "fake_A": fake_a,
            "fake_B": fake_b,
            "rec_A": s.nets.G_BA(fake_b),
            "rec_B": s.nets.G_AB(fake_a),
        }

    def generator_phase(self, s):
        t = self.train_args
        adv_ab = generator_adversarial_loss(t.loss, s.nets.D_B(s["fake_B"]).float())
        adv_ba = generator_adversarial_loss(t.loss, s.nets.D_A(s["fake_A"]).float())
        cycle_a = cycle_loss(s["real_A"], s["rec_A"].float(), t.lambda_cycle)
        cycle_b = cycle_loss(s["real_B"], s["rec_B"].float(), t.lambda_cycle)
        total = adv_ab + adv_ba + cycle_a + cycle_b
        metrics = {
            "loss/G_AB": adv_ab.detach(),
            "loss/G_BA": adv_ba.detach(),
            "loss/cycle_A": cycle_a.detach(),
            "loss/cycle_B": cycle_b.detach(),
        }
        if t.lambda_identity > 0:
            weight = t.lambda_identity * t.lambda_cycle
            idt_a = identity_loss(s["real_A"], s.nets.G_BA(s["real_A"]).float(), weight)
            idt_b = identity_loss(s["real_B"], s.nets.G_AB(s["real_B"]).float(), weight)
            total = total + idt_a + idt_b
            metrics.update({"loss/idt_A": idt_a.detach(), "loss/idt_B": idt_b.detach()})
        metrics["loss/G"] = total.detach()
        return total, metrics

    def pooled(self, name: str, fake: torch.Tensor) -> torch.Tensor:
        """This process's share of the pool's answer for the GLOBAL batch of fakes: every process
        queries its identical pool with the same gathered batch, so the history (and the coin
        flips) are those of one process training on the whole batch."""
        acc = self.accelerator
        everyone = acc.gather(fake.detach().contiguous())
        answer = self.pools[name].query(everyone)
        n = fake.shape[0]
        return answer[acc.process_index * n : (acc.process_index + 1) * n]

    def discriminator_phase(self, s):
        loss = self.train_args.loss
        fake_a = self.pooled("pool_A", s["fake_A"])
        fake_b = self.pooled("pool_B", s["fake_B"])
        d_a = discriminator_loss(loss, s.nets.D_A(s["real_A"]).float(), s.nets.D_A(fake_a).float())
        d_b = discriminator_loss(loss, s.nets.D_B(s["real_B"]).float(), s.nets.D_B(fake_b).float())
        # D_A and D_B share no parameter: one backward of the sum gives each its own gradient.
        return d_a + d_b, {"loss/D_A": d_a.detach(), "loss/D_B": d_b.detach()}
