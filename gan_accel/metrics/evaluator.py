"""GANEvaluator: FID/KID, the SWD, class coverage and the real-data floor of a generator, in one call.

Everything that does not depend on the generator is built once in the constructor (and cached
on disk): the train/held-out split, the domain classifier, the reference statistics of the real
training images, the floor (the same FID/KID/SWD between a real training subset and as many
held-out real images, with its real-vs-real interval) and the SWD's real side.
:meth:`GANEvaluator.evaluate` then only samples the generator, extracts features and computes, cheap
enough to run every few hundred training steps on a CPU with the domain extractor.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Dict, Iterator, List, Optional, Tuple

import torch
import torch.nn as nn

from .. import interrupt
from ..data import ImageData, to_float_images
from ..errors import UserError
from .bootstrap import BOOTSTRAP_LEVEL, BOOTSTRAP_RESAMPLES, bootstrap_intervals
from .cache import data_fingerprint, load_cached, resolve_cache_dir, save_atomic, settings_key, tensor_hash
from .coverage import COVERAGE_MIN_SHARE_RATIO, class_coverage, conditional_accuracy
from .distance import FeatureDistance, kid_subset_size
from .domain import DomainFeatures, DomainModel, DomainTrainSettings, load_or_train_domain_model
from .fidelity import K_DENSITY_COVERAGE, K_PRECISION_RECALL, check_num_images, per_sample_scores
from .inception import load_inception_features
from .protocol import metric_protocol, real_data_protocol, save_protocol, weights_sha256
from .real_draws import REAL_DRAWS, feature_intervals, swd_interval
from .result import EvalResult, format_result
from .split import split_indices
from .swd import SWD_MAX_IMAGES, SWD_PATCHES_PER_IMAGE, SWD_PROJECTIONS, SWDReference, pyramid_sizes

log = logging.getLogger(__name__)

FEATURE_EXTRACTORS = ("domain", "inception")
# In the floor's cache key: 2 since its intervals are draws of real images, no longer a bootstrap.
FLOOR_VERSION = 2
__all__ = ["FEATURE_EXTRACTORS", "EvalResult", "GANEvaluator", "format_result"]  # EvalResult: from .result


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
    bootstrap_resamples:     resamples behind each metric's own interval (0: none; the real-vs-real ones are draws).
    k_precision_recall:      k of the k-NN balls of precision and recall.
    k_density_coverage:      k of the k-NN balls of density and coverage.
    """

    def __init__(
        self,
        real: ImageData,
        feature_extractor: str = "domain",
        num_images: int = 1000,
        cache_dir: Optional[str] = None,
        device: Optional[str] = None,
        seed: int = 0,
        batch_size: int = 250,
        inception_weights: Optional[str] = None,
        min_classifier_accuracy: float = 0.9,
        heldout_fraction: float = 0.2,
        max_reference_images: int = 10000,
        kid_subsets: int = 50,
        coverage_min_share_ratio: float = COVERAGE_MIN_SHARE_RATIO,
        classifier: DomainTrainSettings = DomainTrainSettings(),
        bootstrap_resamples: int = BOOTSTRAP_RESAMPLES,
        k_precision_recall: int = K_PRECISION_RECALL,
        k_density_coverage: int = K_DENSITY_COVERAGE,
    ) -> None:
        if feature_extractor not in FEATURE_EXTRACTORS:
            raise UserError(
                f"--feature_extractor must be one of {', '.join(FEATURE_EXTRACTORS)}; got {feature_extractor!r}"
            )
        check_num_images("num_images", num_images)
        self.real = real
        self.feature_extractor = feature_extractor
        self.num_images = num_images
        self.device = torch.device(device or "cpu")
        self.seed = seed
        self.batch_size = batch_size
        self.coverage_min_share_ratio = coverage_min_share_ratio
        self.bootstrap_resamples = bootstrap_resamples
        self.k_precision_recall = k_precision_recall
        self.k_density_coverage = k_density_coverage
        self.cache_dir = resolve_cache_dir(cache_dir)
        train_idx, heldout_idx = split_indices(len(real), heldout_fraction)
        self.heldout_idx = heldout_idx

        # Inception first: a missing weights file should fail before minutes of classifier training.
        features: Optional[nn.Module] = None
        if feature_extractor == "inception":
            features = load_inception_features(inception_weights, self.cache_dir)
        self.domain = self._domain_model(train_idx, heldout_idx, min_classifier_accuracy, classifier)
        if features is None:
            features = DomainFeatures(self.domain.classifier, self.domain.key)
        features = features.to(self.device).eval()
        self.features = features

        fingerprint = data_fingerprint(real)
        ref_idx = train_idx[:max_reference_images]
        self.reference_idx = ref_idx
        if len(ref_idx) <= features.num_features:
            # FID's covariance of n <= D feature vectors is singular: the number then says more about
            # n than about the generator (and KID's subsets are a handful of images).
            log.warning(
                "warning: the real reference is %d images, no more than the %d feature dimensions: FID and KID "
                "from it are mostly noise; evaluate against a few hundred images or more",
                len(ref_idx),
                features.num_features,
            )
        self.protocol_base = dict(
            feature_extractor=feature_extractor,
            feature_weights_sha256=weights_sha256(features),
            **real_data_protocol(real, len(train_idx), fingerprint),
            seed=seed,
            k_precision_recall=k_precision_recall,
            k_density_coverage=k_density_coverage,
            bootstrap_resamples=bootstrap_resamples,
            bootstrap_level=BOOTSTRAP_LEVEL,
        )
        self.distance = FeatureDistance(features, kid_subsets, seed, self.device)
        self._load_or_set_reference(self.distance, ref_idx, features.cache_key, fingerprint)
        self.num_floor = min(self.num_images, len(heldout_idx), len(train_idx))
        # The SWD's real side: the floor's training images (seconds of pyramids and sorts: not cached);
        # none for images smaller than a patch.
        size = min(self.num_floor, SWD_MAX_IMAGES) if pyramid_sizes(real.images.shape[-1]) else 0
        self.swd_reference = SWDReference(self._real_images(train_idx[:size]), seed) if size else None
        self.floor = self._floor(features, train_idx, heldout_idx, kid_subsets, fingerprint)
        self.floor_distance = FeatureDistance(features, kid_subsets, seed, self.device)
        self.floor_distance.set_reference(self._real_batches(train_idx[: self.num_floor]))
        self.label_probs = self._label_probs()

    # -- built once ---------------------------------------------------------------------------

    def _domain_model(
        self, train_idx: torch.Tensor, heldout_idx: torch.Tensor, min_accuracy: float, settings: DomainTrainSettings
    ) -> Optional[DomainModel]:
        """The classifier (features and/or coverage), or None for unlabelled data with Inception."""
        if self.real.labels is None and self.feature_extractor == "inception":
            return None  # no labels: no coverage, FID/KID only
        domain = load_or_train_domain_model(self.real, train_idx, heldout_idx, self.cache_dir, settings, self.device)
        if self.feature_extractor == "domain":
            domain.require_accuracy(min_accuracy, self.real.name)
        elif domain.accuracy < min_accuracy:
            log.warning(
                "domain classifier held-out accuracy %.3f < %s: class coverage is not reported",
                domain.accuracy,
                min_accuracy,
            )
            return None
        return domain

    def _real_batches(self, idx: torch.Tensor) -> Iterator[torch.Tensor]:
        for chunk in idx.split(self.batch_size):
            yield to_float_images(self.real.images[chunk])

    def _load_or_set_reference(
        self, distance: FeatureDistance, idx: torch.Tensor, features_key: str, fingerprint: str
    ) -> None:
        key = settings_key(features=features_key, data=fingerprint, idx=tensor_hash(idx))
        path = self.cache_dir / "reference" / f"{key}.pt"
        state = load_cached(path)
        if state is not None:
            distance.load_reference_state(state)
            return
        distance.set_reference(self._real_batches(idx))
        save_atomic(distance.reference_state(), path)

    def _floor(
        self,
        features: nn.Module,
        train_idx: torch.Tensor,
        heldout_idx: torch.Tensor,
        kid_subsets: int,
        fingerprint: str,
    ) -> Dict[str, object]:
        """FID/KID (and the SWD's ``swd``) between ``n`` real training images and ``n`` held-out ones:
        what a generator that draws fresh real images would score at this sample size; ``intervals``:
        how far each moves over draws of other real images (gan_accel.metrics.real_draws)."""
        n = self.num_floor
        key = settings_key(
            version=FLOOR_VERSION,
            features=features.cache_key,
            data=fingerprint,
            train=tensor_hash(train_idx[:n]),
            heldout=tensor_hash(heldout_idx),
            pool=tensor_hash(self.reference_idx),
            kid_subsets=kid_subsets,
            seed=self.seed,
            draws=REAL_DRAWS,
            swd=[SWD_MAX_IMAGES, SWD_PATCHES_PER_IMAGE, SWD_PROJECTIONS] if self.swd_reference else None,
        )
        path = self.cache_dir / "floor" / f"{key}.pt"
        cached = load_cached(path)
        if cached is not None:
            return cached
        distance = FeatureDistance(features, kid_subsets, self.seed, self.device)
        distance.set_reference(self._real_batches(train_idx[:n]))
        floor: Dict[str, object] = dict(distance.score(self._real_batches(heldout_idx[:n])))
        real, heldout = distance.last_features()
        # The pools the draws come from, in features computed once: the reference's training images
        # (the floor's own when the reference is capped below n) and every held-out image.
        pool = max(self.distance.reference_features(), real, key=len)
        heldout = torch.cat([heldout, *map(self.features_of, self._real_batches(heldout_idx[n:]))])
        estimates = {"fid": floor["fid"], "kid": floor["kid_mean"]}
        floor["intervals"] = feature_intervals(pool, heldout, n, estimates, kid_subset_size(n, n), seed=self.seed)
        if self.swd_reference is not None:  # at its own size (SWD_MAX_IMAGES at most), as it scores generators
            swd = self.swd_reference.score(self._real_images(heldout_idx[: min(n, SWD_MAX_IMAGES)])).value
            floor["swd"] = swd
            floor["intervals"]["swd"] = swd_interval(self._real_images, train_idx, heldout_idx, n, swd, seed=self.seed)
        save_atomic(floor, path)
        return floor

    def _real_images(self, idx: torch.Tensor) -> torch.Tensor:
        return to_float_images(self.real.images[idx])

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
        probs = (
            self.label_probs
            if self.label_probs is not None and len(self.label_probs) == num_classes
            else torch.full((max(num_classes, 1),), 1.0 / max(num_classes, 1), dtype=torch.float64)
        )
        g_device = next((p.device for p in G.parameters()), self.device)
        gen = torch.Generator().manual_seed(self.seed)
        for start in range(0, self.num_images, self.batch_size):
            b = min(self.batch_size, self.num_images - start)
            z = torch.randn(b, G.z_dim, generator=gen).to(g_device)
            if num_classes:
                y = torch.multinomial(probs, b, replacement=True, generator=gen)
                x = G(z, y.to(g_device))
            else:
                y = None
                x = G(z)
            if x.shape[1:] != self.real.images.shape[1:]:
                raise UserError(
                    f"the generator makes images of shape {tuple(x.shape[1:])} but the real data is "
                    f"{tuple(self.real.images.shape[1:])}; pass the --image_size/--channels it was trained with"
                )
            yield x.float().clamp(-1.0, 1.0), y

    @contextlib.contextmanager
    def _sampling(self, G: nn.Module) -> Iterator[None]:
        """G in eval mode and the RNG seeded, both restored afterwards: every sampling of G by this
        evaluator draws the same images and leaves the caller's random streams where they were."""
        g_device = next((p.device for p in G.parameters()), self.device)
        cuda = (
            [g_device.index if g_device.index is not None else torch.cuda.current_device()]
            if g_device.type == "cuda"
            else []
        )
        was_training = G.training
        G.eval()
        try:
            with torch.random.fork_rng(devices=cuda):
                torch.manual_seed(self.seed)  # for generators that draw their own noise (e.g. noise inputs)
                yield
        finally:
            G.train(was_training)

    @torch.no_grad()
    def generated_images(self, G: nn.Module) -> torch.Tensor:
        """The ``num_images`` images an evaluation of ``G`` scores (float [-1, 1], on the CPU)."""
        with self._sampling(G):
            return torch.cat([x.cpu() for x, _ in self._generate(G)])

    @torch.no_grad()
    def features_of(self, images: torch.Tensor) -> torch.Tensor:
        """FID features ``[N, D]`` (on :attr:`device`) of float [-1, 1] images, in batches."""
        return torch.cat([self.features(chunk.to(self.device)) for chunk in images.split(self.batch_size)])

    @torch.no_grad()
    def evaluate_full(self, G: nn.Module) -> EvalResult:
        """All figures for generator ``G`` (``forward(z, labels=None)``, attributes ``z_dim`` and
        ``num_classes``). G is put in eval mode for the call and restored; the caller's RNG state
        is untouched (the evaluation runs in a forked RNG)."""
        interrupt.phase("evaluate")
        preds: List[torch.Tensor] = []
        conds: List[torch.Tensor] = []
        first: List[torch.Tensor] = []  # the first num_floor generated images, for the same-size score
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

        with self._sampling(G):
            scores = self.distance.score(fake_batches())
            same_size = self.floor_distance.score(torch.cat(first)[: self.num_floor].split(self.batch_size))
        result = EvalResult(
            fid=scores["fid"],
            kid_mean=scores["kid_mean"],
            kid_std=scores["kid_std"],
            fid_floor=self.floor["fid"],
            kid_floor_mean=self.floor["kid_mean"],
            kid_floor_std=self.floor["kid_std"],
            num_generated=int(scores["num_images"]),
            num_reference=self.distance.num_real,
            num_floor=int(self.floor["num_images"]),
            feature_extractor=self.feature_extractor,
            fid_at_floor_size=same_size["fid"],
            kid_at_floor_size_mean=same_size["kid_mean"],
        )
        if self.domain is not None:
            cov = class_coverage(
                torch.cat(preds), self.real.labels, self.real.num_classes, self.coverage_min_share_ratio
            )
            result.classifier_accuracy, result.classifier_f1_macro = self.domain.accuracy, self.domain.f1_macro
            result.classes_covered, result.num_classes = cov["classes_covered"], cov["num_classes"]
            result.coverage_kl, result.class_histogram = cov["kl"], cov["histogram"]
            if conds and int(getattr(G, "num_classes", 0)) == self.real.num_classes:
                result.conditional_accuracy = conditional_accuracy(torch.cat(preds), torch.cat(conds))
        self._add_fidelity_and_protocol(result)
        self._add_swd(result, torch.cat(first)[: self.num_floor])
        return result

    def _add_swd(self, result: EvalResult, generated: torch.Tensor) -> None:
        """The SWD of as many generated images as the floor's held-out side, the real-vs-real
        intervals, and which metrics are saturated."""
        result.floor_intervals = dict(self.floor.get("intervals", {}))
        if self.swd_reference is not None:
            score = self.swd_reference.score(generated.float().cpu(), self.bootstrap_resamples, BOOTSTRAP_LEVEL)
            result.swd, result.swd_levels, result.swd_floor = score.value, score.levels, self.floor["swd"]
            if score.interval:
                result.intervals["swd"] = score.interval
        result.mark_saturated()

    def _add_fidelity_and_protocol(self, result: EvalResult) -> None:
        """Precision/recall/density/coverage, the bootstrap intervals and the protocol, from the
        features the FID/KID computation just kept (nothing runs through a network again)."""
        real, fake = self.distance.last_features()
        # As many real images as generated: both manifolds are then estimated from equal counts,
        # and the first ones of the (shuffled) reference are a random subset.
        real_pr = real[: fake.shape[0]]
        terms = per_sample_scores(real_pr, fake, self.k_precision_recall, self.k_density_coverage)
        finite = bool(torch.isfinite(fake).all())  # NaN distances would compare False and read as 0
        for name in ("precision", "recall", "density", "coverage"):
            setattr(result, name, float(terms[name].mean()) if finite else float("nan"))
        subset_size = kid_subset_size(real.shape[0], fake.shape[0])
        # Centred on the reported values (KID: torchmetrics' mean over its subsets), which each
        # interval must hold.
        reported = {"fid": result.fid, "kid": result.kid_mean}
        reported.update({name: getattr(result, name) for name in terms})
        result.intervals = bootstrap_intervals(
            real, fake, terms, subset_size, self.bootstrap_resamples, seed=self.seed, estimates=reported
        )
        result.protocol = metric_protocol(
            **self.protocol_base, num_real=real.shape[0], num_fake=fake.shape[0], kid_subset_size=subset_size
        )
        save_protocol(self.cache_dir, result.protocol)

    def evaluate(self, G: nn.Module) -> Dict[str, float]:
        """Flat float metrics under ``eval/`` keys: ``eval/fid``, ``eval/kid_mean``, ``eval/kid_std``,
        ``eval/fid_floor``, ``eval/kid_floor_mean``, ``eval/classes_covered``, ``eval/coverage_kl``,
        ``eval/classifier_accuracy``, ``eval/conditional_accuracy`` (when they apply), sizes,
        ``eval/precision``, ``eval/recall``, ``eval/density``, ``eval/coverage``, ``eval/swd``,
        ``eval/swd_floor``, their ``eval/<name>_ci_low``/``_ci_high`` intervals, the floors'
        ``eval/<name>_floor_ci_low``/``_high``, ``eval/<name>_saturated`` and ``eval/protocol_id``."""
        return self.evaluate_full(G).flat()
