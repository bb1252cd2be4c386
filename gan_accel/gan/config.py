"""Typed configuration of the GAN path (one dataclass per concern)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Optional, Tuple

from ..config import FREE, WARN, check_choice, check_positive, choice
from ..data import DATASETS
from ..errors import ConfigError
from ..loop.budget import MIN_BUDGET_S, parse_budget, parse_duration
from ..metrics.fidelity import MIN_IMAGES, check_num_images
from ..models import ARCHS, D_NORMS, G_NORMS, supported_sizes
from .augment import parse_ada_transforms, parse_policy
from .losses import LOSSES

SCHEDULERS = ("constant", "linear", "cosine")
PRESETS = ("auto", "none")
IN_MEMORY = ("auto", "yes", "no")


@dataclass
class GANDataArguments:
    dataset: str = choice(
        "digits",
        DATASETS,
        "Training images: scikit-learn's bundled digits (offline), an image folder, a torchvision dataset, a folder through `datasets` (imagefolder) or a Hugging Face dataset (hub, with --dataset_name).",
    )
    data_dir: Optional[str] = field(
        default=None,
        metadata={"reads": "folder dataset", "help": "Folder of images (--dataset folder) or torchvision root."},
    )
    download: bool = field(
        default=False, metadata={"help": "Let torchvision download MNIST/Fashion-MNIST/CIFAR-10 into --data_dir."}
    )
    image_size: int = field(
        default=32, metadata={"help": "Square training resolution (images are resized and centre-cropped)."}
    )
    channels: int = field(default=1, metadata={"help": "1 (grey) or 3 (RGB); images are converted."})
    # Large datasets (README: "Train on a large image folder"): gan_accel/data/source.py.
    dataset_name: Optional[str] = field(
        default=None,
        metadata={
            "help": "A Hugging Face dataset to load with `datasets` (extra `hub`); implies --dataset hub. Labels from its `label` column."
        },
    )
    dataset_split: str = field(
        default="train", metadata={"help": "Split of --dataset_name / --dataset imagefolder to train on."}
    )
    data_in_memory: str = choice(
        "auto",
        IN_MEMORY,
        "Keep the decoded dataset in one uint8 tensor on the accelerator (yes), stream batches from the decode cache through DataLoader workers (no), or decide by --max_data_memory_mb (auto).",
        resume=FREE,
    )
    max_data_memory_mb: Optional[float] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "Budget of --data_in_memory auto, in MB (default: half the accelerator's free memory; on the CPU half the available RAM, split between the machine's processes).",
        },
    )
    data_cache_dir: Optional[str] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "Decode cache of folders and `datasets` images, shared by runs (default $GAN_ACCEL_CACHE, else ~/.cache/gan_accel/images); 'none' decodes in memory or on the fly instead.",
        },
    )
    dataloader_num_workers: int = field(
        default=2,
        metadata={
            "resume": FREE,
            "help": "DataLoader worker processes of the streaming path (0: in the training process).",
        },
    )
    data_decode_workers: Optional[int] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "Processes that build the decode cache (default: one per CPU core; 0: in the training process).",
        },
    )

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, DATASETS)
        check_choice("data_in_memory", self.data_in_memory, IN_MEMORY)
        if self.dataset_name:
            if self.dataset not in ("digits", "hub"):  # digits: the default, i.e. not given
                raise ConfigError(f"--dataset_name loads a Hugging Face dataset; drop --dataset {self.dataset}")
            self.dataset = "hub"
        elif self.dataset == "hub":
            raise ConfigError("--dataset hub needs --dataset_name NAME (a Hugging Face dataset)")
        check_positive("max_data_memory_mb", self.max_data_memory_mb)
        check_positive("dataloader_num_workers", self.dataloader_num_workers, allow_zero=True)
        check_positive("data_decode_workers", self.data_decode_workers, allow_zero=True)
        if self.channels not in (1, 3):
            raise ConfigError(f"--channels must be 1 or 3; got {self.channels}")
        check_positive("image_size", self.image_size)


@dataclass
class GANModelArguments:
    arch: str = choice("dcgan", tuple(ARCHS), "Generator/discriminator architecture.")
    z_dim: int = field(default=100, metadata={"help": "Noise dimension."})
    g_channels: int = field(
        default=64, metadata={"help": "Width of G's last hidden layer (doubles towards the input)."}
    )
    d_channels: int = field(default=64, metadata={"help": "Width of D's first layer (doubles with depth)."})
    d_norm: str = choice("batch", D_NORMS, "Normalisation in D ('none' or 'spectral' for exact DDP equivalence).")
    g_norm: str = choice("batch", G_NORMS, "Normalisation in G ('none' for exact DDP equivalence).")
    conditional: bool = field(
        default=False, metadata={"help": "Class-conditional G and projection D (needs labelled data)."}
    )
    progressive_share: float = field(
        default=0.0,
        metadata={
            "help": "Progressive resolution (--arch dcgan): the share of the run's planned length trained at half the image size (about half the cost per update), before a fade to full size; 0: off."
        },
    )
    progressive_fade: float = field(
        default=0.1,
        metadata={
            "resume": WARN,
            "help": "With --progressive_share: the share of the run's planned length over which half-size images fade into full-size ones.",
        },
    )

    def __post_init__(self) -> None:
        check_choice("arch", self.arch, tuple(ARCHS))
        check_choice("d_norm", self.d_norm, D_NORMS)
        check_choice("g_norm", self.g_norm, G_NORMS)
        for name in ("z_dim", "g_channels", "d_channels"):
            check_positive(name, getattr(self, name))
        self.check_progressive()

    @property
    def progressive(self) -> bool:
        return self.progressive_share > 0

    def check_progressive(self) -> None:
        share, fade = self.progressive_share, self.progressive_fade
        if not 0.0 <= share < 1.0:  # also NaN
            raise ConfigError(f"--progressive_share must be in [0, 1); got {share}")
        if not 0.0 <= fade <= 1.0:
            raise ConfigError(f"--progressive_fade must be in [0, 1]; got {fade}")
        if share + fade > 1.0:
            raise ConfigError(
                f"--progressive_share {share} + --progressive_fade {fade} exceed the run (1); lower either"
            )
        if share > 0 and self.arch != "dcgan":
            raise ConfigError(
                f"--progressive_share works with --arch dcgan only, not --arch {self.arch}; "
                "pass --arch dcgan or leave out --progressive_share"
            )

    def build_networks(self, channels: int, image_size: int, num_classes: int = 0):
        """``(G, D)`` as these flags describe them, for images of ``channels x image_size^2`` (a
        run's networks, and the precision probe's copies of them)."""
        from ..models import build_models

        return build_models(
            self.arch,
            z_dim=self.z_dim,
            channels=channels,
            image_size=image_size,
            g_channels=self.g_channels,
            d_channels=self.d_channels,
            d_norm=self.d_norm,
            g_norm=self.g_norm,
            num_classes=num_classes,
            progressive=self.progressive,
        )

    def check_recon_weight(self, recon_weight: float) -> None:
        """A --recon_weight other than its default on an arch whose D reconstructs nothing would
        be silently ignored."""
        default = GANTrainArguments.__dataclass_fields__["recon_weight"].default
        if recon_weight != default and not getattr(ARCHS[self.arch][1], "reconstructs", False):
            raise ConfigError(
                f"--recon_weight weighs the reconstruction loss of --arch fastgan's discriminator; "
                f"--arch {self.arch} has none: drop --recon_weight"
            )

    def check_image_size(self, image_size: int) -> None:
        sizes = supported_sizes(self.arch)
        if image_size not in sizes:
            raise ConfigError(
                f"--image_size {image_size} is not supported by --arch {self.arch}; use one of {', '.join(map(str, sizes))}"
            )


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


EVAL_FEATURES = ("domain", "inception")


@dataclass
class GANEvalArguments:
    """Evaluation during training (gan_accel.metrics): FID/KID, coverage, the real-data floor."""

    eval_every: int = field(
        default=0,
        metadata={
            "resume": FREE,
            "help": "G updates between evaluations (0: off). The best generator by FID (by SWD once the FID saturates) goes to OUTPUT_DIR/best_generator/.",
        },
    )
    eval_num_images: int = field(
        default=1000, metadata={"resume": FREE, "help": f"Generated images per evaluation (at least {MIN_IMAGES})."}
    )
    eval_feature_extractor: str = choice(
        "domain",
        EVAL_FEATURES,
        "FID/KID features: a classifier trained on the real data (offline) or Inception-v3 (local weights).",
        resume=FREE,
    )
    eval_cache_dir: Optional[str] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "Cache of the domain classifier and reference statistics (default OUTPUT_DIR/cache; share one folder between runs to train the classifier once).",
        },
    )
    inception_weights: Optional[str] = field(
        default=None,
        metadata={"resume": FREE, "help": "Inception-v3 FID weights file, for --eval_feature_extractor inception."},
    )
    num_evaluations: int = field(
        default=0,
        metadata={
            "resume": FREE,
            "help": "Evaluations spread evenly over the run, whatever its length (also one set by --time_budget); 0: use --eval_every.",
        },
    )
    eval_real_images: int = field(
        default=0,
        metadata={
            "resume": FREE,
            "help": "Real images the evaluation uses (a fixed random subset: the domain classifier, the reference statistics and the floor are built from it once); 0: all (up to 25,000 when streaming).",
        },
    )

    # Set by --preset auto when it turned evaluation on (the user asked for none): an evaluation
    # that cannot be built then leaves the run without one, with a warning, instead of stopping it.
    chosen_by_preset: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_positive("eval_every", self.eval_every, allow_zero=True)
        check_positive("eval_real_images", self.eval_real_images, allow_zero=True)
        check_positive("num_evaluations", self.num_evaluations, allow_zero=True)
        check_num_images("eval_num_images", self.eval_num_images)
        check_choice("eval_feature_extractor", self.eval_feature_extractor, EVAL_FEATURES)


GAN_CONFIG_TYPES = (GANDataArguments, GANModelArguments, GANTrainArguments, GANEvalArguments)
