"""The autocast precision of a budgeted run on a CPU, chosen by measuring rather than guessing.

A CPU with AVX512-BF16 or AMX runs the GAN update in bf16 about 1.8x faster than in fp32; one
with AVX2 only runs it several times slower. Which one this machine is, the flags cannot say:
so at the start of a ``--time_budget`` run (``--measure_precision``, on by default), without
``--mixed_precision`` (and on a CPU, in one process) a few updates of the run's own G and D, at its batch size, are timed each way, the
faster is kept and the ratio printed in one line. Accelerate fixes the precision when the
Accelerator is built, so this runs before it, with the settings (:meth:`GANTrainer.resolve_settings`).

The probe trains copies nobody keeps, from weights of its own, under a forked RNG: the run's
weights, noise and data order are those of a run given the chosen ``--mixed_precision``. Its
seconds count in the budget (the budget's clock starts with the process).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Callable, List, Optional, Tuple

import torch

from .. import interrupt

# A probe of a few seconds is worth it in a run of minutes; a shorter budget keeps fp32.
MIN_BUDGET_S = 120.0
PROBE_UPDATES = 3  # timed updates each way, interleaved (after one warm-up update each)
# bf16 is kept only when it is at least this much faster: timings on a shared machine jitter,
# and fp32 is the precision every other default was tuned in.
MIN_SPEEDUP = 1.1


@dataclasses.dataclass(frozen=True)
class Verdict:
    mixed_precision: str  # "bf16" or "no"
    fp32_s: float  # seconds per update, median
    bf16_s: float

    def line(self) -> str:
        speed = self.fp32_s / self.bf16_s if self.bf16_s > 0 else float("inf")
        kept = "bf16" if self.mixed_precision == "bf16" else "fp32"
        return (
            f"--mixed_precision {self.mixed_precision}: measured on this CPU, one update takes "
            f"{self.fp32_s * 1000:.0f} ms in fp32 and {self.bf16_s * 1000:.0f} ms in bf16 "
            f"(bf16 {speed:.2f}x the speed of fp32): keeping {kept}; pass --mixed_precision to choose yourself"
        )


def choose(fp32_times: List[float], bf16_times: List[float], min_speedup: float = MIN_SPEEDUP) -> Verdict:
    """The faster precision from timings of single updates (medians: one preempted update on a
    busy machine must not decide)."""
    fp32_s = statistics.median(fp32_times)
    bf16_s = statistics.median(bf16_times)
    faster = bf16_s > 0 and fp32_s / bf16_s >= min_speedup
    return Verdict("bf16" if faster else "no", fp32_s, bf16_s)


def should_probe(budget_s: Optional[float], device: str, num_processes: int, dry_run: bool) -> bool:
    """Only where it decides something: a budgeted run long enough to pay for the probe, on a
    CPU (a GPU's choice is the user's), in one process (ranks timing apart could choose apart),
    and really training (``--dry_run`` shows fp32 and measures nothing)."""
    return budget_s is not None and budget_s >= MIN_BUDGET_S and device == "cpu" and num_processes == 1 and not dry_run


UpdateFn = Callable[[bool], None]  # one update, in bf16 autocast when True


def time_updates(update: UpdateFn, count: int = PROBE_UPDATES, clock=time.perf_counter) -> Tuple[list, list]:
    """(fp32 seconds, bf16 seconds) of ``count`` updates each, after one untimed warm-up each
    (allocations, oneDNN's kernel choice), fp32 and bf16 alternating so that a machine that gets
    busier slows both alike. Stops early once bf16 is twice as slow: then it is no contest, and
    an AVX2-only CPU would spend many seconds on the bf16 updates."""
    update(False)
    update(True)
    fp32: List[float] = []
    bf16: List[float] = []
    for _ in range(count):
        for use_bf16, times in ((False, fp32), (True, bf16)):
            start = clock()
            update(use_bf16)
            times.append(clock() - start)
        if min(bf16) > 2 * max(fp32):
            break
    return fp32, bf16


def gan_update(train, model, data) -> UpdateFn:
    """One D update then one G update of the run's networks (fresh copies, the run's loss,
    batch size, image shape and memory format; no penalties or augmentation, which cost the
    same share in either precision)."""
    from .speed import to_channels_last
    from .step import d_loss, g_loss

    num_classes = 10 if model.conditional else 0  # the class count only sizes an embedding
    G, D = model.build_networks(data.channels, data.image_size, num_classes)
    real = torch.rand(train.batch_size, data.channels, data.image_size, data.image_size) * 2 - 1
    if train.channels_last:
        to_channels_last(G, D)
        real = real.contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, num_classes, (train.batch_size,)) if num_classes else None
    # FastGAN's D rebuilds the reals in the run's D update: its decoders are convolutions too.
    reconstructs = getattr(D, "reconstructs", False) and train.recon_weight > 0
    quadrants = torch.randint(0, 4, (train.batch_size,)) if reconstructs else None
    betas = (train.adam_beta1, train.adam_beta2)
    opt_G = torch.optim.Adam(G.parameters(), lr=train.lr_g, betas=betas)
    opt_D = torch.optim.Adam(D.parameters(), lr=train.lr_d, betas=betas)

    def update(use_bf16: bool) -> None:
        z = torch.randn(train.batch_size, model.z_dim)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_bf16):
            fake = G(z, labels)
            loss_D, _ = d_loss(
                D, real, fake, labels, train.loss, recon_quadrants=quadrants, recon_weight=train.recon_weight
            )
        opt_D.zero_grad(set_to_none=True)
        loss_D.backward()
        opt_D.step()
        D.requires_grad_(False)  # as the recipe's G phase: G's loss must not reach D
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_bf16):
            loss_G, _ = g_loss(D, fake, labels, train.loss)
        opt_G.zero_grad(set_to_none=True)
        loss_G.backward()
        opt_G.step()
        D.requires_grad_(True)

    return update


def probe(train, model, data) -> Verdict:
    """Time the run's update both ways (:func:`time_updates`) and choose (:func:`choose`). The
    global RNG is forked: what the probe draws leaves the run's streams as they were."""
    interrupt.phase("probe")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        fp32, bf16 = time_updates(gan_update(train, model, data))
    return choose(fp32, bf16)


def saved_precision(output_dir: Optional[str], spec: Optional[str]) -> Tuple[Optional[str], bool]:
    """The ``mixed_precision`` of the checkpoint a resume would load (None: none to load, or
    unreadable; the run's own checks say why later), and whether that run had a ``--time_budget``
    (its precision may be the probe's choice). A path that is no checkpoint is refused here
    (``UserError``), as the run would refuse it, and not after the seconds of a probe."""
    import json
    from pathlib import Path

    from ..loop.checkpoint import STATE_FILE, CheckpointManager

    if not spec or not output_dir:
        return None, False
    path = CheckpointManager(None, Path(output_dir), 0).resolve(spec)
    if path is None:
        return None, False
    try:
        saved = json.loads((path / STATE_FILE).read_text()).get("config", {})
        value, budgeted = saved.get("mixed_precision"), saved.get("time_budget") is not None
    except (OSError, ValueError, AttributeError):
        return None, False
    return (value if isinstance(value, str) else None), budgeted


def resolve(configs: tuple, given: set, print_fn=print, probe_fn=probe) -> tuple:
    """``(data, model, train, evaluation, run)`` with the precision a budgeted CPU run measured
    (:func:`should_probe`), or, on a resume without ``--mixed_precision`` where this run or the
    checkpoint's has a ``--time_budget``, the checkpoint's. Other runs are left as they are."""
    import os

    from ..loop.budget import parse_duration

    data, model, train, evaluation, run = configs
    if "mixed_precision" in given:
        return configs
    saved, budgeted = saved_precision(run.output_dir, run.resume_from_checkpoint)
    if saved is not None and (train.time_budget is not None or budgeted):
        # The precision the run was probed to (or given) when it started: a resume keeps it
        # (another one would be refused as a changed setting). Also without --time_budget: the
        # user never chose that precision, so a refusal must not list it as their change.
        return (data, model, train, evaluation, dataclasses.replace(run, mixed_precision=saved))
    if train.time_budget is None:
        return configs
    if not train.measure_precision:
        return configs
    device = "cuda" if torch.cuda.is_available() and not run.cpu else "cpu"
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    budget_s = parse_duration(train.time_budget) if train.time_budget else None
    if not should_probe(budget_s, device, world, run.dry_run):
        return configs
    verdict = probe_fn(train, model, data)
    print_fn(verdict.line())
    return (data, model, train, evaluation, dataclasses.replace(run, mixed_precision=verdict.mixed_precision))
