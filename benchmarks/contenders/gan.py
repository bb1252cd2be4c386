"""GAN contenders: the toolkit's real loop (:class:`GANTrainer` on the engine) and a minimal hand-written PyTorch
loop with the same formulas, so that for the same seed both end with the same weights.

Both train DCGAN (BatchNorm G and D, non-saturating loss, Adam, EMA of G) on scikit-learn's
digits, one D update then one G update per batch. Set-up and ``warmup`` steps are not timed; the
toolkit's end-of-run files (checkpoint, sample grid) are timed separately and reported beside.
"""

from __future__ import annotations

import copy
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Optional

import torch
import torch.nn.functional as F

from benchmarks.common import reset_accelerate, synchronize


@dataclass
class GANBenchSetup:
    image_size: int = 32
    batch_size: int = 64
    z_dim: int = 100
    g_channels: int = 64
    d_channels: int = 64
    lr: float = 2e-4
    betas: tuple = (0.5, 0.999)
    ema_decay: float = 0.999
    rounds: int = 8  # interleaved rounds; each contender runs one chunk per round
    chunk: int = 4  # timed G updates per contender per round
    warmup: int = 3  # untimed updates first (allocations, autotuning, compilation)
    log_every: int = 20
    seed: int = 0
    cpu: bool = True


def load_digits(setup: GANBenchSetup):
    from gan_accel.data import load_image_data

    return load_image_data("digits", image_size=setup.image_size, channels=1)


# ---- the toolkit ---------------------------------------------------------------------------
def build_toolkit(
    setup: GANBenchSetup,
    out_dir: Path,
    *,
    channels_last: bool = False,
    mixed_precision: str = "no",
    compile: bool = False,
    arch: str = "dcgan",
):
    """A GANTrainer exactly as ``train_gan.py`` builds it, with periodic files off."""
    from gan_accel.gan.config import GANDataArguments, GANModelArguments, GANTrainArguments
    from gan_accel.gan.trainer import GANTrainer

    reset_accelerate()
    data = GANDataArguments(dataset="digits", image_size=setup.image_size, channels=1)
    model = GANModelArguments(arch=arch, z_dim=setup.z_dim, g_channels=setup.g_channels, d_channels=setup.d_channels)
    train = GANTrainArguments(
        batch_size=setup.batch_size,
        max_steps=setup.warmup + setup.rounds * setup.chunk,
        lr_g=setup.lr,
        lr_d=setup.lr,
        adam_beta1=setup.betas[0],
        adam_beta2=setup.betas[1],
        ema_decay=setup.ema_decay,
        sample_every=0,
        num_sample_images=16,
        channels_last=channels_last,
        compile=compile,
    )
    run = contender_run_args(out_dir, setup, mixed_precision=mixed_precision, cpu=setup.cpu)
    return GANTrainer(data, model, train, run)


def contender_run_args(out_dir: Path, setup, **flags):
    """The run flags of a timed task: a scratch folder, the setup's seed and log cadence, no
    periodic checkpoint; ``flags`` add to them."""
    from gan_accel.config import RunArguments

    return RunArguments(
        output_dir=str(out_dir),
        overwrite_output_dir=True,
        seed=setup.seed,
        log_every=setup.log_every,
        checkpointing_steps=0,
        **flags,
    )


class ChunkedTask:
    """A task's real loop, advanced in chunks: ``advance(n)`` raises the engine's ``max_steps`` by
    ``n`` and calls ``Engine.train_loop()``, which continues from its own state (data position,
    noise, EMA) exactly as a resumed run would. The checkpoint and the grid hooks
    (``AFTER_CHECKPOINT``) would run at each chunk's "end": they are stubbed while timing, and
    :meth:`end_of_run_io` times the real checkpoint and ``write_grid()`` once."""

    def __init__(self, task, write_grid: Callable[[], object]) -> None:
        from gan_accel.engine import AFTER_CHECKPOINT

        self.task = task
        self.engine = task.engine
        self.device = task.accelerator.device
        self._save_checkpoint, self._write_grid = self.engine.save_checkpoint, write_grid
        self.engine.save_checkpoint = lambda: None
        self.engine.hooks[:] = [hook for hook in self.engine.hooks if hook.when != AFTER_CHECKPOINT]
        self.engine.max_steps = 0
        self.engine.logger = task.run.make_logger(10**9, unit="img", desc="toolkit")

    def advance(self, num_steps: int) -> None:
        self.engine.max_steps += num_steps
        self.engine.train_loop()

    def end_of_run_io(self) -> float:
        """Seconds of what the loop writes at its end: the checkpoint and the sample grid."""
        synchronize(self.device)
        t0 = time.perf_counter()
        self._save_checkpoint()
        self._write_grid()
        return time.perf_counter() - t0

    def close(self) -> None:
        self.task.run.logger.close()
        reset_accelerate()


class ToolkitContender(ChunkedTask):
    """The GAN task's real loop (:func:`build_toolkit`), chunked; its grid is the EMA sample grid."""

    def __init__(self, setup: GANBenchSetup, out_dir: Path, **variant) -> None:
        self.setup = setup
        self.trainer = build_toolkit(setup, out_dir, **variant)
        super().__init__(self.trainer, self.trainer.save_samples)

    def weights(self) -> Dict[str, torch.Tensor]:
        return toolkit_weights(self.trainer)


def toolkit_weights(trainer) -> Dict[str, torch.Tensor]:
    return _named(trainer.engine.module("G"), trainer.engine.module("D"), trainer.ema.module)


# ---- the plain PyTorch loop ------------------------------------------------------------------
class EpochBatches:
    """Batches of ``real`` in :class:`ResumableSampler`'s order (a ``randperm`` seeded by seed and
    epoch), the last incomplete batch of each epoch dropped: what a hand-written loop does."""

    def __init__(self, real: torch.Tensor, batch_size: int, seed: int) -> None:
        self.real = real
        self.batch_size = batch_size
        self.seed = seed
        self.batch_index = self.epoch = 0
        self.order = self._epoch_order()

    def _epoch_order(self) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        return torch.randperm(self.real.shape[0], generator=g)

    def next(self) -> torch.Tensor:
        B = self.batch_size
        if (self.batch_index + 1) * B > len(self.order):  # drop the last incomplete batch
            self.epoch, self.batch_index = self.epoch + 1, 0
            self.order = self._epoch_order()
        idx = self.order[self.batch_index * B : (self.batch_index + 1) * B].to(self.real.device)
        self.batch_index += 1
        return self.real[idx]


class PlainGAN:
    """What one writes by hand: models ``.to(device)``, fused Adam, a shuffled index per epoch.

    Same init (same model classes after ``torch.manual_seed``), same data order (``randperm``
    seeded as :class:`ResumableSampler` does), same noise (seeded per batch as
    :class:`RandomStreams` does), same EMA formula: with equal semantics the weights equal the
    toolkit's. What it lacks is what the toolkit adds per update: Accelerate's wrappers, the
    non-finite guard, metrics accumulated on the device, signals, cadences.
    """

    def __init__(self, setup: GANBenchSetup, images_u8: torch.Tensor, device, channels_last: bool = False) -> None:
        from gan_accel.models import build_models

        self.setup, self.device = setup, torch.device(device)
        torch.manual_seed(setup.seed)
        self.G, self.D = build_models(
            "dcgan",
            z_dim=setup.z_dim,
            channels=images_u8.shape[1],
            image_size=setup.image_size,
            g_channels=setup.g_channels,
            d_channels=setup.d_channels,
            d_norm="batch",
        )
        fmt = torch.channels_last if channels_last else torch.contiguous_format
        self.G.to(self.device, memory_format=fmt)
        self.D.to(self.device, memory_format=fmt)
        fused = self.device.type in ("cpu", "cuda")
        self.opt_G = torch.optim.Adam(self.G.parameters(), lr=setup.lr, betas=setup.betas, fused=fused)
        self.opt_D = torch.optim.Adam(self.D.parameters(), lr=setup.lr, betas=setup.betas, fused=fused)
        self.ema = copy.deepcopy(self.G).eval().requires_grad_(False)
        real = images_u8.to(self.device).float().div_(127.5).sub_(1.0).contiguous(memory_format=fmt)  # [-1, 1]
        self.batches = EpochBatches(real, setup.batch_size, setup.seed)
        self.gen = torch.Generator(device=self.device)
        self.step = 0
        self.losses = []

    @property
    def epoch(self) -> int:
        return self.batches.epoch

    def train(self, num_steps: int) -> None:
        s, G, D = self.setup, self.G, self.D
        for _ in range(num_steps):
            real = self.batches.next()
            # Noise of batch t: seeded by t, as RandomStreams does (micro-step t, stream "z" at position 0).
            self.gen.manual_seed((s.seed * 1_000_003 + self.step) * 8)
            z = torch.randn(s.batch_size, s.z_dim, generator=self.gen, device=self.device)
            fake = G(z)
            # D: real up, fake down.
            d_loss = (F.softplus(-D(real)) + F.softplus(D(fake.detach()))).mean()
            d_loss.backward()
            self.opt_D.step()
            self.opt_D.zero_grad(set_to_none=True)
            # G: through a frozen D.
            D.requires_grad_(False)
            g_loss = F.softplus(-D(fake)).mean()
            g_loss.backward()
            D.requires_grad_(True)
            self.opt_G.step()
            self.opt_G.zero_grad(set_to_none=True)
            self.step += 1
            # EMA with warm-up: decay = min(decay, (1 + t) / (10 + t)).
            decay = min(s.ema_decay, (1 + self.step) / (10 + self.step))
            with torch.no_grad():
                torch._foreach_lerp_(list(self.ema.parameters()), [p.detach() for p in G.parameters()], 1.0 - decay)
                for b_ema, b in zip(self.ema.buffers(), G.buffers()):
                    b_ema.copy_(b)
            if self.step % s.log_every == 0:
                self.losses.append((self.step, d_loss.item(), g_loss.item()))  # the loop's one host sync

    def weights(self) -> Dict[str, torch.Tensor]:
        return _named(self.G, self.D, self.ema)


class PlainContender:
    def __init__(self, setup: GANBenchSetup, images_u8: torch.Tensor, device, channels_last: bool = False) -> None:
        self.plain = PlainGAN(setup, images_u8, device, channels_last)
        self.device = self.plain.device

    def advance(self, num_steps: int) -> None:
        self.plain.train(num_steps)

    def weights(self) -> Dict[str, torch.Tensor]:
        return self.plain.weights()

    def close(self) -> None:
        pass


# ---- comparing -------------------------------------------------------------------------------
def _named(G, D, ema) -> Dict[str, torch.Tensor]:
    out = {}
    for prefix, module in (("G", G), ("D", D), ("ema", ema)):
        out.update(
            {
                f"{prefix}.{k}": v.detach().float().cpu()
                for k, v in module.state_dict().items()
                if v.is_floating_point()
            }
        )
    return out


def max_abs_diff(a: Dict[str, torch.Tensor], b: Dict[str, torch.Tensor]) -> float:
    if a.keys() != b.keys():
        raise AssertionError(f"different parameters: {sorted(a.keys() ^ b.keys())[:5]}")
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def measure_roofline(plain: PlainGAN, images_per_s: Dict[str, dict], batch_size: int, device) -> dict:
    """FLOPs per update (counted), each contender's achieved FLOP/s and, on a CPU whose lscpu
    tells its clock, its share of the peak (:mod:`benchmarks.speed.roofline`)."""
    from benchmarks.speed.roofline import cpu_peak, gan_update_flops, read_lscpu, roofline

    peak = None
    lscpu = read_lscpu() if torch.device(device).type == "cpu" else None
    if lscpu:
        try:
            peak = cpu_peak(lscpu, torch.get_num_threads())
        except ValueError:
            peak = None  # no clock in lscpu: FLOP/s without a share
    medians = {name: s["median"] for name, s in images_per_s.items()}
    return roofline(gan_update_flops(plain), medians, batch_size, peak)


def device_of(setup: GANBenchSetup) -> torch.device:
    if setup.cpu or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda")


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="gan_accel_bench_"))


__all__ = [
    "ChunkedTask",
    "EpochBatches",
    "GANBenchSetup",
    "bench_gan",
    "PlainContender",
    "PlainGAN",
    "ToolkitContender",
    "build_toolkit",
    "device_of",
    "load_digits",
    "max_abs_diff",
    "scratch_dir",
    "toolkit_weights",
]


# ---- the comparison ----------------------------------------------------------------------------
VARIANTS = {  # toolkit variants measured against the toolkit's default (fp32, NCHW, eager)
    "channels_last": {"channels_last": True},
    "compile": {"compile": True},
    # Built last: Accelerate keeps the mixed-precision mode in a process-wide state, which the
    # others' (disabled) autocast ignores; for the same reason bf16 and fp16 need separate runs.
    "bf16": {"mixed_precision": "bf16"},
    "fp16": {"mixed_precision": "fp16"},
}


def interleaved_images_per_s(contenders: dict, setup, device, label: str, log=print) -> Dict[str, list]:
    """``setup.rounds`` rounds of ``setup.chunk`` updates per contender, the order alternating each
    round (so neither always runs on a warmer cache); images/s of each contender per round."""
    seconds = {name: [] for name in contenders}
    order = list(contenders)
    for r in range(setup.rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            synchronize(device)
            t0 = time.perf_counter()
            contenders[name].advance(setup.chunk)
            synchronize(device)
            seconds[name].append(time.perf_counter() - t0)
        log(f"  {label} round {r + 1}/{setup.rounds}: " + "  ".join(f"{n} {seconds[n][-1]:.2f}s" for n in order))
    images = setup.chunk * setup.batch_size
    return {name: [images / s for s in secs] for name, secs in seconds.items()}


def bench_gan(
    setup: GANBenchSetup, variants=("channels_last", "bf16"), log=print, export_to: Optional[Path] = None
) -> dict:
    """Interleave the contenders chunk by chunk (alternating the order each round) and report
    images/s (median and spread over rounds), per-round ratios, and the weight check."""
    from benchmarks.common import ratios, summary

    device = device_of(setup)
    data = load_digits(setup)
    contenders = {"plain": PlainContender(setup, data.images, device)}
    contenders["toolkit"] = ToolkitContender(setup, scratch_dir())
    for name in sorted(variants, key=lambda v: v in ("bf16", "fp16")):
        contenders[f"toolkit_{name}"] = ToolkitContender(setup, scratch_dir(), **VARIANTS[name])
    warmup_seconds = {}
    for name, c in contenders.items():
        synchronize(device)
        t0 = time.perf_counter()
        c.advance(setup.warmup)
        synchronize(device)
        warmup_seconds[name] = time.perf_counter() - t0
    ips = interleaved_images_per_s(contenders, setup, device, "gan", log)
    diff = max_abs_diff(contenders["toolkit"].weights(), contenders["plain"].weights())
    io_seconds = contenders["toolkit"].end_of_run_io()
    out = {
        "device": str(device),
        "threads": torch.get_num_threads(),
        "setup": {
            k: getattr(setup, k)
            for k in (
                "image_size",
                "batch_size",
                "z_dim",
                "g_channels",
                "d_channels",
                "rounds",
                "chunk",
                "warmup",
                "log_every",
                "seed",
            )
        },
        "images_per_s": {name: summary(v) for name, v in ips.items()},
        "ratio_vs_plain": summary(ratios(ips["toolkit"], ips["plain"])),
        "weights_max_abs_diff": diff,
        "steps_compared": setup.warmup + setup.rounds * setup.chunk,
        "warmup_seconds": warmup_seconds,
        "end_of_run_io_seconds": io_seconds,
    }
    out["variant_ratio_vs_toolkit"] = {
        name: summary(ratios(ips[f"toolkit_{name}"], ips["toolkit"])) for name in variants
    }
    out["roofline"] = measure_roofline(contenders["plain"].plain, out["images_per_s"], setup.batch_size, device)
    if export_to is not None:  # the toolkit's generator, for the sampling benchmark
        from benchmarks.contenders.sampling import export_generator

        out["generator"] = str(export_generator(contenders["toolkit"].trainer, Path(export_to)))
    for c in contenders.values():
        c.close()
    return out
