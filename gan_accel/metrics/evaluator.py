"""GANEvaluator: FID/KID, class coverage and the real-data floor of a generator, in one call.

Everything that does not depend on the generator is built once in the constructor (and cached
on disk): the train/held-out split, the domain classifier, the reference statistics of the real
training images, and the floor (the same FID/KID between a real training subset and as many
held-out real images). :meth:`GANEvaluator.evaluate` then only samples the generator, extracts
features and computes, which is cheap enough to run every few hundred training steps on a CPU
with the domain extractor.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import torch
import torch.nn as nn

from ..data import ImageData, to_float_images
from ..errors import UserError
from .cache import data_fingerprint, load_cached, resolve_cache_dir, save_atomic, settings_key, tensor_hash
from .coverage import COVERAGE_MIN_SHARE_RATIO, class_coverage, conditional_accuracy
from .distance import FeatureDistance
from .domain import DomainFeatures, DomainModel, DomainTrainSettings, load_or_train_domain_model
from .inception import load_inception_features
from .split import split_indices

log = logging.getLogger(__name__)

FEATURE_EXTRACTORS = ("domain", "inception")


@dataclass
class EvalResult:
    """One evaluation. Sizes are reported because FID is biased upwards at small sample sizes:
    compare a result only with results (and the floor) at similar sizes."""

    fid: float
    kid_mean: float
    kid_std: float                      # across KID's random subsets
    fid_floor: float                    # real training subset vs held-out real images, num_floor each
    kid_floor_mean: float
    kid_floor_std: float
    num_generated: int
    num_reference: int                  # real training images behind the reference statistics
    num_floor: int
    feature_extractor: str
    classifier_accuracy: Optional[float] = None   # domain classifier, held-out split
    classifier_f1_macro: Optional[float] = None
    classes_covered: Optional[int] = None         # see gan_accel.metrics.coverage for the rule
    num_classes: Optional[int] = None
    coverage_kl: Optional[float] = None           # KL(real || generated), eps-smoothed
    class_histogram: Optional[List[float]] = None
    conditional_accuracy: Optional[float] = None  # conditional generators only
    # The like-for-like comparison with the floor: the first num_floor generated images against
    # the floor's own real reference (FID is biased upwards at small sizes, so compare these two).
    fid_at_floor_size: Optional[float] = None
    kid_at_floor_size_mean: Optional[float] = None

    def flat(self, prefix: str = "eval/") -> Dict[str, float]:
        """The scalar figures as floats under namespaced keys (for trackers and metrics.jsonl)."""
        out = {}
        for key, value in asdict(self).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[prefix + key] = float(value)
        return out


def format_result(result: EvalResult) -> str:
    """A few human-readable lines (the script prints them; the JSON file has everything)."""
    lines = [
        f"FID {result.fid:.4f}  KID {result.kid_mean:.5f} +- {result.kid_std:.5f}  "
        f"({result.feature_extractor} features, {result.num_generated} generated vs {result.num_reference} real)",
        f"floor: FID {result.fid_floor:.4f}  KID {result.kid_floor_mean:.5f} +- {result.kid_floor_std:.5f}  "
        f"(real training subset vs held-out, {result.num_floor} images each); generated at that size: "
        f"FID {result.fid_at_floor_size:.4f}  KID {result.kid_at_floor_size_mean:.5f}",
    ]
    if result.classes_covered is not None:
        lines.append(f"coverage: {result.classes_covered}/{result.num_classes} classes, KL(real||gen) {result.coverage_kl:.4f}; "
                     f"domain classifier held-out accuracy {result.classifier_accuracy:.4f}")
    if result.conditional_accuracy is not None:
        lines.append(f"conditional accuracy: {result.conditional_accuracy:.4f}")
    return "\n".join(lines)


class GANEvaluator:
    """Evaluates generators against one real dataset.

    real:                    the real images (labels enable the domain classifier and coverage).
    feature_extractor:       "domain" (offline, the default) or "inception" (needs local weights).
    num_images:              generated images per evaluation (also caps the floor's sample size).
    cache_dir:               classifier / reference cache (default $GAN_ACCEL_CACHE or ~/.cache/gan_accel).
    device:                  where features are computed (the generator stays where it is).
    seed:                    fixes the latent codes and KID subsets: repeated evaluations of a
                             training run see the same z, so their differences are the generator's.
    batch_size:              images per forward pass.
    inception_weights:       path to the Inception FID weights file (inception only).
    min_classifier_accuracy: held-out accuracy below which the domain classifier refuses to serve.
    heldout_fraction:        share of the real images held out (classifier accuracy, floor).
    max_reference_images:    cap on the real training images behind the reference statistics.
    kid_subsets:             random subsets KID averages over.
    classifier:              training settings of the domain classifier.
    """

    def __init__(self, real: ImageData, feature_extractor: str = "domain", num_images: int = 1000,
                 cache_dir: Optional[str] = None, device: Optional[str] = None, seed: int = 0, batch_size: int = 250,
                 inception_weights: Optional[str] = None, min_classifier_accuracy: float = 0.9,
                 heldout_fraction: float = 0.2, max_reference_images: int = 10000, kid_subsets: int = 50,
                 coverage_min_share_ratio: float = COVERAGE_MIN_SHARE_RATIO,
                 classifier: DomainTrainSettings = DomainTrainSettings()) -> None:
        if feature_extractor not in FEATURE_EXTRACTORS:
            raise UserError(f"--feature_extractor must be one of {', '.join(FEATURE_EXTRACTORS)}; got {feature_extractor!r}")
        if num_images < 2:
            raise UserError(f"--num_images must be >= 2; got {num_images}")
        self.real, self.feature_extractor, self.num_images = real, feature_extractor, num_images
        self.device = torch.device(device or "cpu")
        self.seed, self.batch_size = seed, batch_size
        self.coverage_min_share_ratio = coverage_min_share_ratio
        self.cache_dir = resolve_cache_dir(cache_dir)
        train_idx, heldout_idx = split_indices(len(real), heldout_fraction)

        # Inception first: a missing weights file should fail before minutes of classifier training.
        features: Optional[nn.Module] = None
        if feature_extractor == "inception":
            features = load_inception_features(inception_weights, self.cache_dir)
        self.domain = self._domain_model(train_idx, heldout_idx, min_classifier_accuracy, classifier)
        if features is None:
            features = DomainFeatures(self.domain.classifier, self.domain.key)
        features = features.to(self.device).eval()

        fingerprint = data_fingerprint(real)
        ref_idx = train_idx[:max_reference_images]
        self.distance = FeatureDistance(features, kid_subsets, seed, self.device)
        self._load_or_set_reference(self.distance, ref_idx, features.cache_key, fingerprint)
        self.floor = self._floor(features, train_idx, heldout_idx, kid_subsets, fingerprint)
        self.num_floor = int(self.floor["num_images"])
        self.floor_distance = FeatureDistance(features, kid_subsets, seed, self.device)
        self.floor_distance.set_reference(self._real_batches(train_idx[: self.num_floor]))
        self.label_probs = self._label_probs()

    # -- built once ---------------------------------------------------------------------------

    def _domain_model(self, train_idx: torch.Tensor, heldout_idx: torch.Tensor, min_accuracy: float,
                      settings: DomainTrainSettings) -> Optional[DomainModel]:
        """The classifier (features and/or coverage), or None for unlabelled data with Inception."""
        if self.real.labels is None and self.feature_extractor == "inception":
            return None   # no labels: no coverage, FID/KID only
        domain = load_or_train_domain_model(self.real, train_idx, heldout_idx, self.cache_dir, settings, self.device)
        if self.feature_extractor == "domain":
            domain.require_accuracy(min_accuracy, self.real.name)
        elif domain.accuracy < min_accuracy:
            log.warning("domain classifier held-out accuracy %.3f < %s: class coverage is not reported",
                        domain.accuracy, min_accuracy)
            return None
        return domain

    def _real_batches(self, idx: torch.Tensor) -> Iterator[torch.Tensor]:
        for chunk in idx.split(self.batch_size):
            yield to_float_images(self.real.images[chunk])

    def _load_or_set_reference(self, distance: FeatureDistance, idx: torch.Tensor, features_key: str,
                               fingerprint: str) -> None:
        key = settings_key(features=features_key, data=fingerprint, idx=tensor_hash(idx))
        path = self.cache_dir / "reference" / f"{key}.pt"
        state = load_cached(path)
        if state is not None:
            distance.load_reference_state(state)
            return
        distance.set_reference(self._real_batches(idx))
        save_atomic(distance.reference_state(), path)

    def _floor(self, features: nn.Module, train_idx: torch.Tensor, heldout_idx: torch.Tensor, kid_subsets: int,
               fingerprint: str) -> Dict[str, float]:
        """FID/KID between ``n`` real training images and ``n`` held-out ones: what a generator that
        draws fresh real images would score at this sample size."""
        n = min(self.num_images, len(heldout_idx), len(train_idx))
        key = settings_key(features=features.cache_key, data=fingerprint, train=tensor_hash(train_idx[:n]),
                           heldout=tensor_hash(heldout_idx[:n]), kid_subsets=kid_subsets, seed=self.seed)
        path = self.cache_dir / "floor" / f"{key}.pt"
        cached = load_cached(path)
        if cached is not None:
            return cached
        distance = FeatureDistance(features, kid_subsets, self.seed, self.device)
        distance.set_reference(self._real_batches(train_idx[:n]))
        floor = distance.score(self._real_batches(heldout_idx[:n]))
        save_atomic(floor, path)
        return floor

    def _label_probs(self) -> Optional[torch.Tensor]:
        """Real class frequencies: conditional generators are sampled with the real label mix so
        that FID compares like with like."""
        if self.real.labels is None:
            return None
        counts = torch.bincount(self.real.labels, minlength=self.real.num_classes).double()
        return counts / counts.sum()

    # -- per evaluation -----------------------------------------------------------------------

    def _generate(self, G: nn.Module) -> Iterator[Tuple[torch.Tensor, Optional[torch.Tensor]]]:
        """``num_images`` generated images in batches (float [-1, 1]) with the labels they were
        conditioned on (None for unconditional G). The latent codes come from a generator seeded
        with ``seed``, so every call sees the same z."""
        num_classes = int(getattr(G, "num_classes", 0) or 0)
        probs = self.label_probs if self.label_probs is not None and len(self.label_probs) == num_classes \
            else torch.full((max(num_classes, 1),), 1.0 / max(num_classes, 1), dtype=torch.float64)
        g_device = next((p.device for p in G.parameters()), self.device)
        gen = torch.Generator().manual_seed(self.seed)
        for start in range(0, self.num_images, self.batch_size):
            b = min(self.batch_size, self.num_images - start)
            z = torch.randn(b, G.z_dim, generator=gen).to(g_device)
            if num_classes:
                y = torch.multinomial(probs, b, replacement=True, generator=gen)
                x = G(z, y.to(g_device))
            else:
                y, x = None, G(z)
            if x.shape[1:] != self.real.images.shape[1:]:
                raise UserError(f"the generator makes images of shape {tuple(x.shape[1:])} but the real data is "
                                f"{tuple(self.real.images.shape[1:])}; pass the --image_size/--channels it was trained with")
            yield x.float().clamp(-1.0, 1.0), y

    @torch.no_grad()
    def evaluate_full(self, G: nn.Module) -> EvalResult:
        """All figures for generator ``G`` (``forward(z, labels=None)``, attributes ``z_dim`` and
        ``num_classes``). G is put in eval mode for the call and restored; the caller's RNG state
        is untouched (the evaluation runs in a forked RNG)."""
        g_device = next((p.device for p in G.parameters()), self.device)
        cuda = [g_device.index if g_device.index is not None else torch.cuda.current_device()] if g_device.type == "cuda" else []
        preds: List[torch.Tensor] = []
        conds: List[torch.Tensor] = []
        first: List[torch.Tensor] = []   # the first num_floor generated images, for the same-size score
        classifier = self.domain.classifier if self.domain is not None else None

        def fake_batches() -> Iterator[torch.Tensor]:
            for x, y in self._generate(G):
                x = x.to(self.device)
                if classifier is not None and self.feature_extractor == "domain":
                    # The penultimate features FID needs anyway, then only the linear head.
                    logits = classifier.head(self.distance.extract(x).float())
                    preds.append(logits.argmax(1).cpu())
                elif classifier is not None:
                    preds.append(classifier(x).argmax(1).cpu())
                if y is not None:
                    conds.append(y)
                if sum(len(f) for f in first) < self.num_floor:
                    first.append(x)
                yield x

        was_training = G.training
        G.eval()
        try:
            with torch.random.fork_rng(devices=cuda):
                torch.manual_seed(self.seed)   # for generators that draw their own noise (e.g. noise inputs)
                scores = self.distance.score(fake_batches())
                same_size = self.floor_distance.score(torch.cat(first)[: self.num_floor].split(self.batch_size))
        finally:
            G.train(was_training)
        result = EvalResult(
            fid=scores["fid"], kid_mean=scores["kid_mean"], kid_std=scores["kid_std"],
            fid_floor=self.floor["fid"], kid_floor_mean=self.floor["kid_mean"], kid_floor_std=self.floor["kid_std"],
            num_generated=int(scores["num_images"]), num_reference=self.distance.num_real,
            num_floor=int(self.floor["num_images"]), feature_extractor=self.feature_extractor,
            fid_at_floor_size=same_size["fid"], kid_at_floor_size_mean=same_size["kid_mean"],
        )
        if self.domain is not None:
            cov = class_coverage(torch.cat(preds), self.real.labels, self.real.num_classes, self.coverage_min_share_ratio)
            result.classifier_accuracy, result.classifier_f1_macro = self.domain.accuracy, self.domain.f1_macro
            result.classes_covered, result.num_classes = cov["classes_covered"], cov["num_classes"]
            result.coverage_kl, result.class_histogram = cov["kl"], cov["histogram"]
            if conds and int(getattr(G, "num_classes", 0)) == self.real.num_classes:
                result.conditional_accuracy = conditional_accuracy(torch.cat(preds), torch.cat(conds))
        return result

    def evaluate(self, G: nn.Module) -> Dict[str, float]:
        """Flat float metrics under ``eval/`` keys: ``eval/fid``, ``eval/kid_mean``, ``eval/kid_std``,
        ``eval/fid_floor``, ``eval/kid_floor_mean``, ``eval/classes_covered``, ``eval/coverage_kl``,
        ``eval/classifier_accuracy``, ``eval/conditional_accuracy`` (when they apply), sizes."""
        return self.evaluate_full(G).flat()
