"""InfoGAN contenders: docs/infogan_example.py (a task written on the engine, run by the runner) and
the same model in a hand-written Accelerate loop, so that for the same seed both end with the same
weights.

Both train the example's G, Q and D (MLPs) on the 16 px digits: one D update, then one update of G
and Q through a frozen D, per batch. The example's updates are small (a few milliseconds on a CPU),
so the engine's per-update work weighs more here than in the DCGAN comparison of :mod:`.gan`.
Set-up and ``warmup`` updates are not timed; the task's checkpoint and grid are stubbed while
timing and timed once after.
"""

from __future__ import annotations

import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Dict

import torch
import torch.nn.functional as F

from benchmarks.common import ratios, reset_accelerate, summary
from benchmarks.contenders.gan import (
    ChunkedTask,
    EpochBatches,
    contender_run_args,
    interleaved_images_per_s,
    max_abs_diff,
    scratch_dir,
)
from gan_accel.engine.streams import named_stream_seed

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "infogan_example.py"


@dataclass
class InfoGANBenchSetup:
    batch_size: int = 64
    rounds: int = 10  # interleaved rounds; each contender runs one chunk per round
    chunk: int = 50  # timed updates per contender per round
    warmup: int = 5  # untimed updates first
    log_every: int = 20
    seed: int = 0


def example() -> dict:
    return runpy.run_path(str(EXAMPLE))


# ---- the task (docs/infogan_example.py on the runner) ------------------------------------------
class ToolkitInfoGAN(ChunkedTask):
    """The example's task on the runner, chunked as :class:`benchmarks.contenders.gan.ToolkitContender` is;
    its grid is the code-by-row grid."""

    def __init__(self, setup: InfoGANBenchSetup, out_dir: Path) -> None:
        reset_accelerate()
        ns = example()
        args = ns["InfoGANArguments"](batch_size=setup.batch_size, max_steps=10**9, sample_every=0)
        task = ns["InfoGAN"](ns["DigitsData"](), args, contender_run_args(out_dir, setup, cpu=True))
        super().__init__(task, task.save_codes_grid)

    def weights(self) -> Dict[str, torch.Tensor]:
        return named({name: self.engine.module(name) for name in ("G", "Q", "D")})


# ---- the same model, by hand ----------------------------------------------------------------------
class PlainInfoGAN:
    """What one writes by hand with Accelerate: ``prepare`` the networks and fused Adam optimizers,
    ``accelerator.backward``, a shuffled index per epoch, the codes drawn per batch, ``.item()``
    every ``log_every`` updates. Same networks (the example's classes, built in its order after
    the same seed), data order, codes and Adam as the task, so the weights must equal its own."""

    def __init__(self, setup: InfoGANBenchSetup, images_u8: torch.Tensor, torch_step: bool = False) -> None:
        """``torch_step``: step and zero the torch optimizers under the prepared ones, as the
        engine does where Accelerate's wrapper would only forward the call (see
        gan_accel.engine.update.plain_step): the loop without the wrapper's per-call cost, so
        that the engine's own overhead is measured apart from it."""
        from accelerate import Accelerator

        ns = example()
        a = ns["InfoGANArguments"](batch_size=setup.batch_size)
        self.setup, self.args, self.codes = setup, a, ns["codes"]
        K, U = a.num_categories, a.num_continuous
        self.accelerator = Accelerator(cpu=True)
        torch.manual_seed(setup.seed)
        G = ns["Generator"](a.z_dim + K + U, tuple(images_u8.shape[1:]))
        D = ns["Discriminator"](images_u8[0].numel())
        Q = ns["mlp"](128, 128, K + U)
        adam = dict(lr=a.lr, betas=(0.5, 0.999), fused=True)
        opt_GQ = torch.optim.Adam([*G.parameters(), *Q.parameters()], **adam)
        opt_D = torch.optim.Adam(D.parameters(), **adam)
        self.G, self.Q, self.D, self.opt_GQ, self.opt_D = self.accelerator.prepare(G, Q, D, opt_GQ, opt_D)
        if torch_step:
            self.opt_GQ, self.opt_D = self.opt_GQ.optimizer, self.opt_D.optimizer
        device = self.accelerator.device
        self.batches = EpochBatches(images_u8.to(device).float().div_(127.5).sub_(1.0), setup.batch_size, setup.seed)
        self.gen = torch.Generator(device=device)
        self.device = device
        self.step = 0
        self.losses = []

    def draw(self, stream: str):
        """Seeded per (seed, step, stream), as the example's RandomStreams (declared by name) does:
        nothing to save on resume."""
        return self.gen.manual_seed(named_stream_seed(self.setup.seed, self.step, stream))

    def advance(self, num_steps: int) -> None:
        a, acc, G, Q, D = self.args, self.accelerator, self.G, self.Q, self.D
        B, K, U = self.setup.batch_size, a.num_categories, a.num_continuous
        for _ in range(num_steps):
            real = self.batches.next()
            z = torch.randn(B, a.z_dim, generator=self.draw("z"), device=self.device)
            c = torch.randint(0, K, (B,), generator=self.draw("c"), device=self.device)
            u = torch.rand(B, U, generator=self.draw("u"), device=self.device) * 2 - 1
            fake = G(torch.cat([z, self.codes(c, u, K)], dim=1))
            # D: real up, fake down.
            real_logits, _ = D(real)
            fake_logits, _ = D(fake.detach())
            d_loss = F.softplus(-real_logits).mean() + F.softplus(fake_logits).mean()
            acc.backward(d_loss)
            self.opt_D.step()
            self.opt_D.zero_grad(set_to_none=True)
            # G and Q: through a frozen D; Q reads the codes back from D's features.
            D.requires_grad_(False)
            logits, features = D(fake)
            q = Q(features)
            info = F.cross_entropy(q[:, :K], c) + F.mse_loss(q[:, K:], u)
            g_loss = F.softplus(-logits).mean() + a.info_weight * info
            acc.backward(g_loss)
            D.requires_grad_(True)
            self.opt_GQ.step()
            self.opt_GQ.zero_grad(set_to_none=True)
            self.step += 1
            if self.step % self.setup.log_every == 0:
                self.losses.append((self.step, d_loss.item(), g_loss.item()))  # the loop's one host sync

    def weights(self) -> Dict[str, torch.Tensor]:
        return named({"G": self.G, "Q": self.Q, "D": self.D})

    def close(self) -> None:
        pass


def named(modules: Dict[str, torch.nn.Module]) -> Dict[str, torch.Tensor]:
    return {
        f"{prefix}.{k}": v.detach().float().cpu()
        for prefix, module in modules.items()
        for k, v in module.state_dict().items()
        if v.is_floating_point()
    }


# ---- the comparison --------------------------------------------------------------------------------
def bench_infogan(setup: InfoGANBenchSetup, log=print) -> dict:
    """Interleave the two chunk by chunk (alternating the order each round); images/s (median and
    spread over rounds), per-round ratios, and the weight check."""
    from gan_accel.data import load_image_data

    data = load_image_data("digits", image_size=16, channels=1)
    toolkit = ToolkitInfoGAN(setup, scratch_dir())
    contenders = {
        "plain": PlainInfoGAN(setup, data.images),
        "plain_torch_step": PlainInfoGAN(setup, data.images, torch_step=True),
        "toolkit": toolkit,
    }
    device = toolkit.device
    for c in contenders.values():
        c.advance(setup.warmup)
    ips = interleaved_images_per_s(contenders, setup, device, "infogan", log)
    out = {
        "device": str(device),
        "threads": torch.get_num_threads(),
        "setup": {k: getattr(setup, k) for k in ("batch_size", "rounds", "chunk", "warmup", "log_every", "seed")},
        "images_per_s": {name: summary(v) for name, v in ips.items()},
        "ratio_vs_plain": summary(ratios(ips["toolkit"], ips["plain"])),
        "ratio_vs_plain_torch_step": summary(ratios(ips["toolkit"], ips["plain_torch_step"])),
        "weights_max_abs_diff": max(
            max_abs_diff(toolkit.weights(), contenders[name].weights()) for name in ("plain", "plain_torch_step")
        ),
        "steps_compared": setup.warmup + setup.rounds * setup.chunk,
        "end_of_run_io_seconds": toolkit.end_of_run_io(),
    }
    for c in contenders.values():
        c.close()
    return out
