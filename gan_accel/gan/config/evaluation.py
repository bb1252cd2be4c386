"""Evaluation of the GAN during training: its cadence, sample count, features and real images."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Optional

from ...config.fields import FREE, check_choice, check_positive, choice
from ...metrics.fidelity import MIN_IMAGES, check_num_images

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
