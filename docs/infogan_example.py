"""InfoGAN on the bundled digits, as a task of your own (docs/engine.md, "A second example"): a
generator G fed noise z, a categorical code c (10 values) and continuous codes u; a discriminator D
whose features also feed a head Q that recovers (c, u) from an image; G and Q on one optimizer,
trained to make D say "real" AND to let Q read the codes back (the mutual-information term).

    python docs/infogan_example.py --output_dir runs/infogan --max_steps 1000
    python docs/infogan_example.py --output_dir runs/infogan --max_steps 1500 --resume_from_checkpoint latest

Every --sample_every steps (and at the end) samples/step_NNNNNN.png shows one row per value of c
and one column per noise vector: as the code is learnt (info/categorical in metrics.jsonl falls
from ln 10 = 2.3 towards 0), each row turns into one kind of digit.
tests/test_infogan_doc.py runs this file and resumes it bit-exactly on 1 and 2 processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from gan_accel.config import FREE, WARN, check_positive
from gan_accel.data import ResumableSampler
from gan_accel.data.fingerprint import image_fingerprint
from gan_accel.data.source import open_images
from gan_accel.engine import AFTER_CHECKPOINT, Hook, Network, Optimizer, Phase, RandomStreams, Recipe, adam
from gan_accel.errors import ConfigError
from gan_accel.gan.config import GANDataArguments
from gan_accel.runner import Output, Plan, Task
from gan_accel.sampling import fixed_noise, save_grid


@dataclass
class DigitsData(GANDataArguments):
    """The GAN's data flags (--dataset, --data_dir, --channels, ...), 16 px by default."""

    image_size: int = field(default=16, metadata={"help": "Square training resolution."})


@dataclass
class InfoGANArguments:
    """The example's settings; each field says what a resume may change (refused by default)."""

    batch_size: int = field(default=64, metadata={"help": "Images per batch and process."})
    z_dim: int = field(default=16, metadata={"help": "Noise dimension."})
    num_categories: int = field(default=10, metadata={"help": "Values of the categorical code c."})
    num_continuous: int = field(default=2, metadata={"help": "Continuous codes u, uniform in [-1, 1]."})
    # 4, not InfoGAN's 1: D is frozen in G's phase, so only G and Q work to make the code readable
    # (on the digits, c's loss stayed at 2.2 of ln 10 = 2.3 after 1,500 steps with 1; 0.18 with 4).
    info_weight: float = field(default=4.0, metadata={"resume": WARN, "help": "Weight of Q's loss."})
    lr: float = field(default=2e-4, metadata={"resume": WARN, "help": "Adam learning rate."})
    max_steps: int = field(default=1500, metadata={"resume": FREE, "help": "Updates to train for."})
    sample_every: int = field(default=500, metadata={"resume": FREE, "help": "Grid every N steps (0: at the end)."})

    def __post_init__(self) -> None:  # a ConfigError is one line naming the flag, no traceback
        for name in ("batch_size", "z_dim", "lr", "max_steps"):
            check_positive(name, getattr(self, name))
        check_positive("info_weight", self.info_weight, allow_zero=True)
        check_positive("sample_every", self.sample_every, allow_zero=True)
        if self.num_categories < 2:
            raise ConfigError(f"--num_categories must be >= 2; got {self.num_categories}")


def mlp(*widths: int) -> nn.Sequential:
    layers = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), nn.LeakyReLU(0.2)]
    return nn.Sequential(*layers[:-1])  # no activation after the last layer


class Generator(nn.Module):
    def __init__(self, code_dim: int, shape: tuple) -> None:
        super().__init__()
        self.shape = shape  # (C, S, S)
        self.net = nn.Sequential(mlp(code_dim, 256, 256, shape[0] * shape[1] * shape[2]), nn.Tanh())

    def forward(self, code: torch.Tensor) -> torch.Tensor:  # [B, z + K + U] -> [B, C, S, S] in [-1, 1]
        return self.net(code).view(-1, *self.shape)


class Discriminator(nn.Module):
    """Returns (real/fake logits [B], features [B, 128]): Q reads the same features."""

    def __init__(self, pixels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(mlp(pixels, 256, 128), nn.LeakyReLU(0.2))
        self.head = nn.Linear(128, 1)

    def forward(self, images: torch.Tensor):
        features = self.body(images.flatten(1))
        return self.head(features).squeeze(1), features


def codes(c: torch.Tensor, u: torch.Tensor, num_categories: int) -> torch.Tensor:
    return torch.cat([F.one_hot(c, num_categories).float(), u], dim=1)


def d_loss(s):
    real_logits, _ = s.nets.D(s["real"])
    fake_logits, _ = s.nets.D(s["fake"].detach())
    loss = F.softplus(-real_logits).mean() + F.softplus(fake_logits).mean()  # -log D(x) - log(1 - D(G(z)))
    return loss, {"loss/D": loss.detach()}


def gq_loss(s, num_categories: int, info_weight: float):
    logits, features = s.nets.D(s["fake"])  # D frozen: the gradient reaches G, not D
    adversarial = F.softplus(-logits).mean()  # -log D(G(z))
    q = s.nets.Q(features)  # [B, K + U]: logits of c, then the means of u
    categorical = F.cross_entropy(q[:, :num_categories], s["c"])  # -log Q(c | x)
    continuous = F.mse_loss(q[:, num_categories:], s["u"])  # Gaussian -log Q(u | x), unit variance, up to a constant
    info = categorical + continuous
    metrics = {
        "loss/G": adversarial.detach(),
        "info/categorical": categorical.detach(),
        "info/continuous": continuous.detach(),
    }
    return adversarial + info_weight * info, metrics


class InfoGAN(Task):
    project = "infogan"
    configs = {"data_args": DigitsData, "args": InfoGANArguments}
    outputs = (Output("generator.pt"), Output("samples"))

    def read_data(self) -> None:  # under main_process_first: the decode cache is built once
        self.data = open_images(self.data_args, self.accelerator)

    def check(self) -> None:  # before the run folder exists
        self.data.check_batch_size(self.args.batch_size, self.accelerator.num_processes)

    def data_fingerprint(self) -> dict:  # a resume on other images is refused
        return image_fingerprint(self.data_args, self.data)

    def build(self) -> Plan:
        a, acc, seed = self.args, self.accelerator, self.run_args.seed
        K, U = a.num_categories, a.num_continuous
        G = Generator(a.z_dim + K + U, self.data.shape)
        D = Discriminator(self.data.shape[0] * self.data.image_size**2)
        streams = RandomStreams(("z", "c", "u"), seed, acc, a.batch_size)

        def inputs(s):
            real, _ = self.data.real_batch(s.batch)  # float images in [-1, 1]
            z = streams.normal("z", s.micro_step, a.z_dim)  # [B, z_dim]
            c = streams.categorical("c", s.micro_step, K)  # [B] int64 in 0..K-1
            u = streams.uniform("u", s.micro_step, U) * 2 - 1  # [B, U] in [-1, 1)
            fake = s.nets.G(torch.cat([z, codes(c, u, K)], dim=1))
            return {"real": real, "fake": fake, "c": c, "u": u}

        recipe = Recipe(
            networks=[
                Network("G", G, optimizer="GQ"),  # G and Q on one optimizer
                Network("Q", mlp(128, 128, K + U), optimizer="GQ"),
                Network("D", D, optimizer="D"),
            ],
            optimizers=[Optimizer("GQ", adam(a.lr, (0.5, 0.999))), Optimizer("D", adam(a.lr, (0.5, 0.999)))],
            phases=[
                Phase("D", trains=["D"], loss=d_loss),
                Phase("GQ", trains=["G", "Q"], frozen=["D"], loss=lambda s: gq_loss(s, K, a.info_weight)),
            ],
            progress="GQ",
            inputs=inputs,
        )
        sampler = ResumableSampler(len(self.data), seed=seed)
        loader = self.data.make_loader(a.batch_size, sampler, self.data_args.dataloader_num_workers, acc.device)
        return Plan(recipe, loader, a.max_steps)

    def hooks(self) -> list:
        # After the checkpoint: a grid that fails to write never costs one.
        return [Hook(self.save_codes_grid, every=self.args.sample_every, when=AFTER_CHECKPOINT)]

    def save_codes_grid(self, columns: int = 8) -> None:
        """Row k: c = k for every image; column j: the same noise z_j down the column; u = 0."""
        if not self.accelerator.is_main_process:
            return  # the unwrapped G below runs no collective, so the other ranks need not wait
        a = self.args
        K = a.num_categories
        z = fixed_noise(columns, a.z_dim, self.run_args.seed).repeat(K, 1)  # [K * columns, z_dim]
        c = torch.arange(K).repeat_interleave(columns)  # 0 0 ... 1 1 ...: row-major, a row per value
        u = torch.zeros(K * columns, a.num_continuous)
        G = self.engine.module("G")
        with torch.no_grad():
            images = G(torch.cat([z, codes(c, u, K)], dim=1).to(self.accelerator.device))
        save_grid(images, self.run.output_dir / "samples" / f"step_{self.run.state.step:06d}.png", nrow=columns)

    def export(self) -> None:  # main process, once the run finished
        torch.save(self.engine.module("G").state_dict(), self.run.output_dir / "generator.pt")


main = InfoGAN.script(__doc__)

if __name__ == "__main__":
    raise SystemExit(main())
