"""A complete task on the engine, as docs/engine.md describes it: an adversarial autoencoder on
random vectors (an encoder E and a generator G on one optimizer, a discriminator D trained
twice per G update, a frozen feature network F), with an EMA copy of G, checkpointed.

    python docs/engine_example.py --output_dir runs/aae --max_steps 20
    python docs/engine_example.py --output_dir runs/aae --max_steps 40 --resume_from_checkpoint latest

tests/test_engine_doc.py runs this file, so it cannot drift from the API.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from gan_accel.config import FREE, WARN
from gan_accel.data import ResumableSampler
from gan_accel.engine import UPDATE, Hook, LRSchedule, Network, Optimizer, Phase, RandomStreams, Recipe, State, adam
from gan_accel.gan.ema import EMA
from gan_accel.runner import Output, Plan, Task

N, DIM, CODE = 256, 8, 4


@dataclass
class AAEArguments:
    """The example's settings; each field says what a resume may change (refused by default)."""

    batch_size: int = field(default=32, metadata={"help": "Samples per batch."})
    n_critic: int = field(default=2, metadata={"help": "D updates per G update."})
    lr: float = field(default=2e-3, metadata={"resume": WARN, "help": "Adam learning rate."})
    max_steps: int = field(default=20, metadata={"resume": FREE, "help": "G updates to train for."})


def d_loss(s):  # s: the Step (networks, batch, shared values)
    real_logits, fake_logits = s.nets.D(s["real"]), s.nets.D(s["fake"].detach())
    loss = F.softplus(-real_logits).mean() + F.softplus(fake_logits).mean()
    return loss, {"loss/D": loss.detach()}  # (loss, metrics): metrics stay on the device


def g_loss(s):
    adversarial = F.softplus(-s.nets.D(s["fake"])).mean()
    perceptual = (s.nets.F(s["fake"]) - s.nets.F(s["real"])).abs().mean()
    return adversarial + perceptual, {"loss/G": adversarial.detach(), "loss/perceptual": perceptual.detach()}


class AAE(Task):
    project = "aae"  # recorded in every checkpoint
    configs = {"args": AAEArguments}  # the CLI: these flags plus the shared run flags
    outputs = (Output("generator.pt"),)  # what --overwrite_output_dir removes besides the shared files

    def read_data(self) -> None:  # under main_process_first, before the run folder
        self.data = torch.randn(N, DIM, generator=torch.Generator().manual_seed(1))

    def build(self) -> Plan:
        a, acc = self.args, self.accelerator
        G, E = nn.Linear(CODE, DIM), nn.Linear(DIM, CODE)
        D = nn.Sequential(nn.Linear(DIM, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        streams = RandomStreams(("noise",), self.run_args.seed, acc, a.batch_size)  # named, per step, resumable

        def inputs(s):  # once per micro-batch, before the phases
            real = self.data.to(acc.device)[s.batch]
            real = real + 0.01 * streams.normal("noise", s.micro_step, DIM)
            with torch.set_grad_enabled(s.runs("G")):  # one G forward serves both phases
                fake = s.nets.G(s.nets.E(real))
            return {"real": real, "fake": fake}

        n = a.n_critic
        schedule = LRSchedule("constant", warmup_updates=2)  # counted in run steps (G updates)
        recipe = Recipe(
            networks=[
                Network("G", G, optimizer="G"),  # G and E share one optimizer
                Network("E", E, optimizer="G"),
                Network("D", D, optimizer="D"),
                Network("F", nn.Linear(DIM, DIM)),
            ],  # no optimizer: never trains, never DDP-wrapped
            optimizers=[
                Optimizer("G", adam(a.lr, (0.5, 0.999)), schedule),
                Optimizer("D", adam(a.lr, (0.5, 0.999)), schedule),
            ],  # stretched n times: D's cadence
            phases=[
                Phase("D", trains=["D"], loss=d_loss),
                Phase("G", trains=["G", "E"], frozen=["D"], loss=g_loss, every=n, offset=n - 1),
            ],
            progress="G",  # --max_steps counts G's updates
            inputs=inputs,
        )
        loader = DataLoader(
            range(N), batch_size=a.batch_size, sampler=ResumableSampler(N, seed=self.run_args.seed), drop_last=True
        )
        return Plan(recipe, loader, a.max_steps)

    def hooks(self) -> list:
        self.ema = EMA(self.engine.module("G"), decay=0.9)
        return [
            State("ema", self.ema),  # saved as ema.safetensors in every checkpoint
            Hook(lambda: self.ema.update(self.engine.module("G"), self.run.state.step), when=UPDATE),
        ]

    def export(self) -> None:  # main process, once the run finished
        torch.save(self.ema.module.state_dict(), self.run.output_dir / "generator.pt")


main = AAE.script(__doc__)

if __name__ == "__main__":
    raise SystemExit(main())
