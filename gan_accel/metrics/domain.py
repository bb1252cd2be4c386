"""The domain classifier: a small CNN trained on the labelled real training images.

Its penultimate layer (128 features after global average pooling) is the offline feature space
for FID/KID when no Inception weights are at hand, and its predictions on generated images give
class coverage. It is only as good as its held-out accuracy, which is reported with every result
and must reach a stated threshold before its features are used.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm.auto import tqdm

from ..data import ImageData, to_float_images
from ..errors import UserError
from .cache import data_fingerprint, load_cached, save_atomic, settings_key, tensor_hash
from .classification import classification_metrics

log = logging.getLogger(__name__)

# Bump when the network or its training changes, so caches from the old version are not reused.
DOMAIN_VERSION = 1


class DomainClassifier(nn.Module):
    """Three conv blocks -> global average pool (the features) -> linear head. Any image size >= 4."""

    def __init__(self, channels: int, num_classes: int, width: int = 32) -> None:
        super().__init__()

        def block(c_in: int, c_out: int) -> list:
            return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True)]

        self.body = nn.Sequential(
            *block(channels, width),
            nn.MaxPool2d(2),
            *block(width, 2 * width),
            nn.MaxPool2d(2),
            *block(2 * width, 4 * width),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.num_features = 4 * width
        self.head = nn.Linear(self.num_features, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """float images in [-1, 1] ``[B, C, H, W]`` -> ``[B, num_features]``."""
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


@dataclass(frozen=True)
class DomainTrainSettings:
    """How the classifier is trained (all part of its cache key)."""

    epochs: int = 5  # passes over the training split (capped at max_train_images)
    batch_size: int = 32  # small batches: more steps for the same compute on small sets
    lr: float = 2e-3  # Adam; cosine-decayed to 0 over the run
    max_train_images: int = 20000  # bounds the one-off training time on CPU for MNIST-sized data
    width: int = 32  # channels of the first conv block (features = 4 * width)
    seed: int = 0


def train_domain_classifier(
    images: torch.Tensor, labels: torch.Tensor, num_classes: int, settings: DomainTrainSettings, device: torch.device
) -> DomainClassifier:
    """Train on uint8 ``images [N, C, H, W]`` and int64 ``labels [N]``; returns the model in eval mode.

    Runs inside its own RNG scope so that calling it mid-training does not move the trainer's
    random streams.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        model = DomainClassifier(images.shape[1], num_classes, settings.width).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
        n = images.shape[0]
        steps_per_epoch = -(-n // settings.batch_size)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=settings.epochs * steps_per_epoch)
        gen = torch.Generator().manual_seed(settings.seed)
        model.train()
        # A one-off training of about a minute on CPU: a bar (on stderr, like training's) shows it
        # is working rather than hung.
        with tqdm(
            total=settings.epochs * steps_per_epoch,
            desc="domain classifier (one-off, cached)",
            unit="step",
            leave=False,
            dynamic_ncols=True,
        ) as bar:
            for _ in range(settings.epochs):
                for idx in torch.randperm(n, generator=gen).split(settings.batch_size):
                    x = to_float_images(images[idx]).to(device)
                    y = labels[idx].to(device)
                    loss = F.cross_entropy(model(x), y)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    sched.step()
                    bar.update(1)
    return model.eval()


@torch.no_grad()
def predict(model: nn.Module, images_u8: torch.Tensor, device: torch.device, batch_size: int = 512) -> torch.Tensor:
    """Predicted classes (int64, CPU) for uint8 images."""
    out = [
        model(to_float_images(images_u8[i : i + batch_size]).to(device)).argmax(1).cpu()
        for i in range(0, images_u8.shape[0], batch_size)
    ]
    return torch.cat(out)


@dataclass
class DomainModel:
    """A trained classifier with its held-out scores and the key its cache file is named by."""

    classifier: DomainClassifier
    accuracy: float  # on the held-out split, never seen in training
    f1_macro: float
    key: str

    def require_accuracy(self, min_accuracy: float, dataset: str) -> None:
        """Refuse to serve features from a classifier too weak to separate the classes."""
        if self.accuracy < min_accuracy:
            raise WeakClassifierError(
                f"the domain classifier for {dataset} reaches only {self.accuracy:.3f} held-out accuracy "
                f"(< {min_accuracy}); its features would make FID/KID meaningless",
                "Lower --min_classifier_accuracy if you accept that, or use --feature_extractor inception",
            )


class WeakClassifierError(UserError):
    """The domain classifier cannot tell the classes apart (sub-folders by date or by camera rather
    than by content). ``summary`` says so; the message adds ``hint`` in evaluate-gan's flags, and a
    command with other flags (train-gan) words its own."""

    def __init__(self, summary: str, hint: str) -> None:
        super().__init__(f"{summary}. {hint}")
        self.summary = summary


def load_or_train_domain_model(
    real: ImageData,
    train_idx: torch.Tensor,
    heldout_idx: torch.Tensor,
    cache_dir: Path,
    settings: DomainTrainSettings = DomainTrainSettings(),
    device: Optional[torch.device] = None,
) -> DomainModel:
    """The classifier for ``real``, loaded from ``cache_dir/domain/`` or trained and saved there."""
    if real.labels is None:
        raise UserError(
            f"--feature_extractor domain needs labelled data, but {real.name or 'the dataset'} has no labels "
            "(for a folder: one sub-folder per class); use --feature_extractor inception"
        )
    if real.num_classes < 2:
        raise UserError(f"the domain classifier needs at least 2 classes; {real.name} has {real.num_classes}")
    device = torch.device(device or "cpu")
    key = settings_key(
        version=DOMAIN_VERSION, data=data_fingerprint(real), split=tensor_hash(heldout_idx), **asdict(settings)
    )
    path = cache_dir / "domain" / f"{_safe(real.name)}-{real.images.shape[-1]}px-{real.channels}ch-{key}.pt"
    cached = load_cached(path)
    classifier = DomainClassifier(real.channels, real.num_classes, settings.width)
    if cached is not None:
        classifier.load_state_dict(cached["state_dict"])
        log.info("domain classifier loaded from %s (held-out accuracy %.4f)", path, cached["accuracy"])
        return DomainModel(classifier.to(device).eval(), cached["accuracy"], cached["f1_macro"], key)

    fit_idx = train_idx[: settings.max_train_images]
    log.info("training the domain classifier on %d %s images (cached afterwards in %s)", len(fit_idx), real.name, path)
    classifier = train_domain_classifier(
        real.images[fit_idx], real.labels[fit_idx], real.num_classes, settings, device
    )
    preds = predict(classifier, real.images[heldout_idx], device)
    scores = classification_metrics(preds, real.labels[heldout_idx], real.num_classes)
    state = {k: v.cpu() for k, v in classifier.state_dict().items()}
    save_atomic({"state_dict": state, "accuracy": scores["accuracy"], "f1_macro": scores["f1_macro"]}, path)
    return DomainModel(classifier, scores["accuracy"], scores["f1_macro"], key)


def _safe(name: str) -> str:
    """A file-name-safe version of a dataset name (folder datasets are named by their path)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:40] or "data"


class DomainFeatures(nn.Module):
    """The classifier's penultimate features as a torchmetrics ``feature=`` module.

    Input: float images in [-1, 1] ``[B, C, H, W]``; output float64 ``[B, num_features]`` (FID's
    covariance and matrix square root are computed in float64, and KID's kernel too).
    """

    def __init__(self, classifier: DomainClassifier, key: str) -> None:
        super().__init__()
        self.classifier = classifier.eval()
        self.num_features = classifier.num_features
        self.cache_key = f"domain-{key}"

    def train(self, mode: bool = True) -> "DomainFeatures":
        # Never let BatchNorm switch to batch statistics: features must not depend on the batch.
        return super().train(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier.features(x).double()
