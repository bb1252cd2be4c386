"""Typed configuration of the CycleGAN recipe (one dataclass per concern).

The run settings (output folder, seed, checkpoints, precision, ...) are the shared
:class:`gan_accel.config.RunArguments`; the names below follow the GAN path's where the concept
is the same (``batch_size``, ``max_steps``, ``adam_beta1``, ``lr_scheduler``, ``warmup_steps``,
``sample_every``, ``eval_every``) and the reference's where it is CycleGAN's own (``n_epochs``,
``n_epochs_decay``, ``lambda_identity``, ``pool_size``, ``preprocess``, ``load_size``, ``no_flip``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..config.fields import FREE, WARN, check_choice, check_positive, choice
from ..errors import ConfigError
from .data import DATASETS, PREPROCESS
from .losses import ADVERSARIAL_LOSSES
from .models import min_image_size
from .schedule import SCHEDULERS


@dataclass
class CycleGANDataArguments:
    dataset: str = choice(
        "digits",
        DATASETS,
        "Unpaired domains: the built-in digits pair (A: digits, B: the same style with thick strokes, disjoint halves; offline) or a folder DATA/trainA, DATA/trainB.",
    )
    data_dir: Optional[str] = field(
        default=None,
        metadata={
            "reads": "folder dataset",
            "help": "Folder with trainA/ and trainB/ (optional testA/, testB/) of images, for --dataset folder.",
        },
    )
    image_size: int = field(
        default=32, metadata={"help": "Square training resolution (a multiple of 4; the paper: 256)."}
    )
    channels: int = field(default=1, metadata={"help": "1 (grey) or 3 (RGB); images are converted."})
    preprocess: str = choice(
        "resize_and_crop",
        PREPROCESS,
        "resize_and_crop: resize to --load_size, then a random --image_size crop per step (the reference's default); resize: straight to --image_size.",
    )
    load_size: int = field(
        default=0,
        metadata={
            "help": "Side images are resized to before the random crop (0: image_size * 286/256, the reference's 286 for 256)."
        },
    )
    flip: bool = field(
        default=True,
        metadata={
            "help": "Random left-right flips of training images (--no_flip turns them off, as the reference's flag)."
        },
    )

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, DATASETS)
        check_choice("preprocess", self.preprocess, PREPROCESS)
        if self.channels not in (1, 3):
            raise ConfigError(f"--channels must be 1 or 3; got {self.channels}")
        check_positive("image_size", self.image_size)
        if self.image_size % 4:
            raise ConfigError(
                f"--image_size must be a multiple of 4 (the generator downsamples twice); got {self.image_size}"
            )
        check_positive("load_size", self.load_size, allow_zero=True)
        if self.preprocess == "resize_and_crop" and self.load_size and self.load_size < self.image_size:
            raise ConfigError(
                f"--load_size ({self.load_size}) must be >= --image_size ({self.image_size}) to crop from it"
            )

    @property
    def decode_size(self) -> int:
        """The side images are decoded at (what the random crop cuts from)."""
        if self.preprocess == "resize":
            return self.image_size
        return self.load_size or round(self.image_size * 286 / 256)

    @property
    def decode_size_flag(self) -> str:
        """``decode_size`` as the flags the user passed: what a warning about it should quote."""
        if self.preprocess == "resize":
            return f"--image_size {self.image_size}"
        if self.load_size:
            return f"--load_size {self.load_size}"
        return f"the {self.decode_size} px load size (--image_size {self.image_size} x 286/256; --load_size sets it)"


@dataclass
class CycleGANModelArguments:
    g_channels: int = field(default=64, metadata={"help": "Width of the generators' first layer (the paper's 64)."})
    n_blocks: int = field(
        default=9, metadata={"help": "Residual blocks per generator (the paper: 6 at 128 px, 9 at 256 px)."}
    )
    d_channels: int = field(
        default=64, metadata={"help": "Width of the PatchGAN discriminators' first layer (the paper's 64)."}
    )
    d_layers: int = field(
        default=3, metadata={"help": "Stride-2 layers of the discriminators after the first (3: the 70x70 PatchGAN)."}
    )

    def __post_init__(self) -> None:
        for name in ("g_channels", "n_blocks", "d_channels", "d_layers"):
            check_positive(name, getattr(self, name), allow_zero=name == "n_blocks")

    def check_image_size(self, image_size: int) -> None:
        # More stride-2 layers than image_size has bits: too small whatever the size, and
        # 2**d_layers of a huge --d_layers would never be computed.
        too_deep = self.d_layers >= image_size.bit_length()
        smallest = f"3 x 2**{self.d_layers}" if too_deep else min_image_size(self.d_layers)
        if too_deep or image_size < smallest:
            raise ConfigError(
                f"--image_size {image_size} is too small for --d_layers {self.d_layers} "
                f"(at least {smallest}); lower --d_layers or raise --image_size"
            )


@dataclass
class CycleGANTrainArguments:
    loss: str = choice("lsgan", ADVERSARIAL_LOSSES, "Adversarial objective (the paper: lsgan).")
    lambda_cycle: float = field(
        default=10.0,
        metadata={"resume": WARN, "help": "Weight of the cycle-consistency L1 loss (the paper's lambda = 10)."},
    )
    lambda_identity: float = field(
        default=0.5,
        metadata={
            "resume": WARN,
            "help": "Weight of the identity L1 loss, as a fraction of --lambda_cycle (0.5: the reference's default; 0 turns it off).",
        },
    )
    pool_size: int = field(
        default=50,
        metadata={"help": "Fakes kept for each discriminator's image history (0: D sees only the newest fakes)."},
    )
    batch_size: int = field(default=1, metadata={"help": "Image pairs per process per micro-batch (the paper: 1)."})
    n_epochs: int = field(
        default=100,
        metadata={"resume": WARN, "help": "Epochs (max(|A|, |B|) pairs each) at the initial learning rate."},
    )
    n_epochs_decay: int = field(
        default=100,
        metadata={
            "resume": WARN,
            "help": "Epochs of linear decay to 0 after --n_epochs (--lr_scheduler reference).",
        },
    )
    max_steps: int = field(
        default=0,
        metadata={"resume": FREE, "help": "Optimizer updates to train for (0: --n_epochs + --n_epochs_decay epochs)."},
    )
    lr: float = field(
        default=2e-4,
        metadata={"resume": WARN, "help": "Adam learning rate of the generators and the discriminators."},
    )
    adam_beta1: float = field(default=0.5, metadata={"resume": WARN, "help": "Adam beta1 (the paper's 0.5)."})
    adam_beta2: float = field(default=0.999, metadata={"resume": WARN, "help": "Adam beta2."})
    lr_scheduler: str = choice(
        "reference",
        SCHEDULERS,
        "reference: constant for --n_epochs then linear to 0 over --n_epochs_decay; the others: the toolkit's schedules over the whole run, after --warmup_steps.",
        resume=WARN,
    )
    warmup_steps: int = field(
        default=0,
        metadata={"resume": WARN, "help": "Linear warm-up in updates (constant/linear/cosine schedulers)."},
    )
    sample_every: int = field(
        default=250, metadata={"resume": FREE, "help": "Updates between sample grids (0: only the final one)."}
    )
    num_sample_images: int = field(
        default=8,
        metadata={
            "resume": FREE,
            "help": "Fixed images per domain in each grid (a row each: real | translated | reconstructed).",
        },
    )

    def __post_init__(self) -> None:
        check_choice("loss", self.loss, ADVERSARIAL_LOSSES)
        check_choice("lr_scheduler", self.lr_scheduler, SCHEDULERS)
        for name in ("batch_size", "lr", "num_sample_images"):
            check_positive(name, getattr(self, name))
        for name in (
            "lambda_cycle",
            "lambda_identity",
            "pool_size",
            "n_epochs",
            "n_epochs_decay",
            "max_steps",
            "warmup_steps",
            "sample_every",
        ):
            check_positive(name, getattr(self, name), allow_zero=True)
        for name in ("adam_beta1", "adam_beta2"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"--{name} must be in [0, 1); got {value}")
        if not self.max_steps and not self.n_epochs + self.n_epochs_decay:
            raise ConfigError("nothing to train: --n_epochs and --n_epochs_decay are 0 and --max_steps is 0")


@dataclass
class CycleGANEvalArguments:
    """Translation quality (gan_accel.metrics): FID against the target domain and class preservation."""

    evaluate: bool = field(
        default=True,
        metadata={
            "resume": FREE,
            "help": "Evaluate the final generators into OUTPUT_DIR/eval_results.json (labelled domains: the digits pair, or class sub-folders in both domains); --no_evaluate skips it.",
        },
    )
    eval_every: int = field(
        default=0,
        metadata={
            "resume": FREE,
            "help": "Updates between evaluations logged to metrics.jsonl as eval/* (0: only the final one).",
        },
    )
    eval_num_images: int = field(
        default=1000, metadata={"resume": FREE, "help": "Source images translated per direction for an evaluation."}
    )
    eval_cache_dir: Optional[str] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "Cache of the domain classifiers and reference statistics (default OUTPUT_DIR/cache).",
        },
    )

    def __post_init__(self) -> None:
        check_positive("eval_every", self.eval_every, allow_zero=True)
        if self.eval_num_images < 2:
            raise ConfigError(f"--eval_num_images must be >= 2; got {self.eval_num_images}")


CYCLEGAN_CONFIG_TYPES = (CycleGANDataArguments, CycleGANModelArguments, CycleGANTrainArguments, CycleGANEvalArguments)
