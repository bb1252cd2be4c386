"""The GAN's networks: architecture, widths, normalisation, conditioning and progressive resolution,
and the checks of other flags that depend on the architecture."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...config.fields import WARN, check_choice, check_positive, choice
from ...errors import ConfigError
from ...models import ARCHS, D_NORMS, G_NORMS, supported_sizes
from .train import GANTrainArguments


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
        from ...models import build_models

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
