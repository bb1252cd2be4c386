"""How the GAN trains: objective and regularisers, optimisation and schedule, EMA, sample grids,
speed switches, adaptive augmentation, the wall-clock budget and the preset."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Optional, Tuple

from ...config.fields import FREE, WARN, check_choice, check_positive, choice
from ...errors import ConfigError
from ...loop.budget import MIN_BUDGET_S, parse_budget, parse_duration
from ..augment import parse_ada_transforms, parse_policy
from ..losses import LOSSES

SCHEDULERS = ("constant", "linear", "cosine")
PRESETS = ("auto", "none")


@dataclass
class GANTrainArguments:
    loss: str = choice("nonsaturating", LOSSES, "GAN objective.")
    gp_weight: float = field(
        default=10.0, metadata={"resume": WARN, "help": "WGAN-GP penalty weight (used with --loss wgan_gp)."}
    )
    r1_gamma: float = field(
        default=0.0,
        metadata={
            "resume": WARN,
            "help": "R1 penalty weight gamma on real images (0: off); any loss, alongside WGAN-GP's.",
        },
    )
    r1_interval: int = field(
        default=16,
        metadata={"help": "Lazy R1: apply it on every k-th D update only, weighted by gamma/2 * k (StyleGAN2)."},
    )
    diffaugment: str = field(
        default="",
        metadata={
            "help": "DiffAugment policy for every D input (real and fake, D and G steps): a comma-separated subset of translation,cutout,color ('' off)."
        },
    )
    # Refused on resume: 0 freezes D's decoders, which changes what D's optimizer holds.
    recon_weight: float = field(
        default=1.0,
        metadata={
            "help": "Weight of the discriminator's self-supervised reconstruction loss on real images (--arch fastgan only; 0: off, its decoders frozen)."
        },
    )
    d_steps_per_g_step: int = field(default=1, metadata={"help": "D updates per G update (n_critic)."})
    batch_size: int = field(default=64, metadata={"help": "Images per process per micro-batch."})
    max_steps: int = field(default=2000, metadata={"resume": FREE, "help": "G optimizer updates to train for."})
    lr_g: float = field(default=2e-4, metadata={"resume": WARN, "help": "Adam learning rate of G."})
    lr_d: float = field(default=2e-4, metadata={"resume": WARN, "help": "Adam learning rate of D."})
    adam_beta1: float = field(default=0.5, metadata={"resume": WARN, "help": "Adam beta1 (0.5 is the DCGAN setting)."})
    adam_beta2: float = field(default=0.999, metadata={"resume": WARN, "help": "Adam beta2."})
    lr_scheduler: str = choice(
        "constant", SCHEDULERS, "Learning-rate schedule of both networks (after warm-up).", resume=WARN
    )
    warmup_steps: int = field(
        default=0, metadata={"resume": WARN, "help": "Linear warm-up, in G updates (D's is scaled by n_critic)."}
    )
    ema_decay: float = field(
        default=0.999,
        metadata={"resume": WARN, "help": "EMA decay of G (0 disables averaging: the EMA is a copy)."},
    )
    ema_start: int = field(default=0, metadata={"help": "G update from which the EMA averages (a plain copy before)."})
    sample_every: int = field(
        default=250, metadata={"resume": FREE, "help": "G updates between sample grids (0: only the final one)."}
    )
    num_grids: int = field(
        default=0,
        metadata={
            "resume": FREE,
            "help": "Sample grids spread evenly over the run (the frames of samples/training.gif); 0: use --sample_every.",
        },
    )
    num_sample_images: int = field(
        default=64, metadata={"resume": FREE, "help": "Images in each sample grid (fixed noise)."}
    )
    channels_last: bool = field(
        default=False,
        metadata={
            "resume": FREE,
            "help": "Keep G, D and the images in channels_last (NHWC) memory format: faster convolutions on recent GPUs and, mildly, on CPU (see the README, Performance).",
        },
    )
    compile: bool = field(
        default=False,
        metadata={
            "resume": FREE,
            "help": "torch.compile G and D in place (checkpoint names unchanged); falls back to eager with a message where compilation is unavailable. Slow to start, pays off on long GPU runs.",
        },
    )
    # Your own photos (docs/photos.md): adaptive augmentation, a wall-clock budget, the preset.
    # ADA on or off changes what every checkpoint holds (ada.safetensors): refused on resume.
    ada: bool = field(
        default=False,
        metadata={
            "help": "Adaptive discriminator augmentation: each --ada_transforms transform is applied to every D input with a probability p adjusted to hold D's overfitting signal r_t = E[sign(D(real))] at --ada_target."
        },
    )
    ada_target: float = field(
        default=0.6,
        metadata={"resume": WARN, "help": "ADA's target for r_t (0.6 in the paper; lower augments more)."},
    )
    ada_kimg: float = field(
        default=20.0,
        metadata={
            "resume": WARN,
            "help": "ADA's speed: thousands of real images over which p can go from 0 to 1 (500 in the paper, for runs of millions of images).",
        },
    )
    ada_initial_p: float = field(
        default=0.0,
        metadata={
            "resume": FREE,
            "help": "ADA's p at the start of the run (a resumed run continues from its checkpoint's p).",
        },
    )
    ada_interval: int = field(
        default=4, metadata={"resume": WARN, "help": "G updates between two adjustments of ADA's p."}
    )
    # No quarter turns by default: on 500 photo crops p reached 1 within minutes, where a turn is as
    # likely as none and G learns turned photos (judge FID 7.92 with them, 5.78 without; docs/photos.md).
    ada_transforms: str = field(
        default="xflip,translation,color,cutout",
        metadata={
            "resume": WARN,
            "help": "ADA's transforms, each applied per image with probability p: a comma-separated subset of xflip,rotate90,translation,color,cutout (rotate90 suits images without an upright; it leaks into G as p nears 1).",
        },
    )
    # The budget is the whole run's (a resumed run keeps the total, saved in budget.safetensors):
    # another budget, or none, on resume is refused.
    time_budget: Optional[str] = field(
        default=None,
        metadata={
            "resume_as": parse_duration,  # 40 and 40s: one budget
            "help": f"Wall-clock budget of the whole run, e.g. 90s, 15m, 2h (at least {MIN_BUDGET_S:g}s): the run measures its pace and sets --max_steps (and the schedule's length) to end inside it, exports included; a resumed run keeps the total. Not with --max_steps on the same command line.",
        },
    )
    # On by default: the probe costs a few seconds of a run of minutes, and at equal time on photo
    # crops the precision it chose scored as well as fp32 or better in a judge the run never
    # selects with, on two CPUs with bf16 units, over several seeds (docs/photos.md).
    measure_precision: bool = field(
        default=True,
        metadata={
            "resume": FREE,
            "help": "With --time_budget (2 minutes or more) on a CPU and no --mixed_precision: time a few updates in fp32 and in bf16 first and keep the faster (bf16 only when at least 1.1x faster), printing both times. --measure_precision False keeps fp32 without measuring.",
        },
    )
    # On by default: the count changes only where the run's own updates measured fewer threads
    # faster (a CPU shared with other processes), and the run says so.
    adapt_threads: bool = field(
        default=True,
        metadata={
            "resume": FREE,
            "help": "With --time_budget on a CPU: at the budget's plans, time a few of the run's own updates with the current thread count and with half of it, keep the faster (fewer only when at least 1.1x faster: other processes share the cores) and print the change; back up once the CPU is free again. Off when OMP_NUM_THREADS is set (your count) or with False.",
        },
    )
    preset: Optional[str] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "auto: choose the architecture, widths, batch size, learning rates, loss, regularisation, augmentation and evaluation from the data, the device and the budget (the default for --dataset folder/imagefolder without --config); none: the flags' defaults. Every explicit flag wins.",
            "choices": list(PRESETS),
        },
    )

    # Set by --preset auto: its choices with their reasons, as printed (the run's report.html shows them).
    preset_lines: ClassVar[Tuple[str, ...]] = ()

    # Set by --preset auto: its choices with their reasons, as printed (the run's report.html shows them).
    preset_lines: ClassVar[Tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        check_choice("loss", self.loss, LOSSES)
        check_choice("lr_scheduler", self.lr_scheduler, SCHEDULERS)
        for name in (
            "batch_size",
            "max_steps",
            "lr_g",
            "lr_d",
            "d_steps_per_g_step",
            "num_sample_images",
            "r1_interval",
        ):
            check_positive(name, getattr(self, name))
        for name in ("gp_weight", "r1_gamma", "recon_weight", "warmup_steps", "ema_start", "sample_every"):
            check_positive(name, getattr(self, name), allow_zero=True)
        # NaN passes every comparison (NaN <= 0 is False) and inf passes "> 0": both would only
        # fail later, inside torch, after the run folder was written.
        for name in ("gp_weight", "r1_gamma", "recon_weight", "lr_g", "lr_d", "adam_beta1", "adam_beta2", "ema_decay"):
            if not math.isfinite(getattr(self, name)):
                raise ConfigError(f"--{name} must be a finite number; got {getattr(self, name)}")
        for name in ("adam_beta1", "adam_beta2", "ema_decay"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"--{name} must be in [0, 1); got {value}")
        try:
            parse_policy(self.diffaugment)
        except ValueError as err:
            raise ConfigError(f"--diffaugment {self.diffaugment!r}: {err}") from None
        check_positive("num_grids", self.num_grids, allow_zero=True)
        if self.preset is not None:
            check_choice("preset", self.preset, PRESETS)
        check_positive("ada_kimg", self.ada_kimg)
        check_positive("ada_interval", self.ada_interval)
        if not 0.0 <= self.ada_initial_p <= 1.0:
            raise ConfigError(f"--ada_initial_p must be in [0, 1]; got {self.ada_initial_p}")
        if not 0.0 < self.ada_target < 1.0:
            raise ConfigError(f"--ada_target must be in (0, 1); got {self.ada_target}")
        try:
            if not parse_ada_transforms(self.ada_transforms) and self.ada:
                raise ValueError("give at least one transform")
        except ValueError as err:
            raise ConfigError(f"--ada_transforms {self.ada_transforms!r}: {err}") from None
        if self.time_budget is not None:
            try:
                parse_budget(self.time_budget)
            except ValueError as err:
                raise ConfigError(f"--time_budget {err}") from None
        if self.warmup_steps >= self.max_steps:
            raise ConfigError(
                f"--warmup_steps ({self.warmup_steps}) must be smaller than --max_steps ({self.max_steps})"
            )
