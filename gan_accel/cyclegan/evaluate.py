"""Translation quality, one direction at a time, with the toolkit's metrics machinery.

- FID of the translations of source images against the target domain's real images, in the
  feature space of a domain classifier trained on the target domain (offline, cached).
- The real-data floor: the same FID between target training images and as many held-out target
  images (what a perfect translator would score at that size), and the translations' FID at that
  size against the floor's own reference (the like-for-like comparison: FID grows at small sizes).
- The untranslated source images' FID against the same reference: what doing nothing scores.
- Class preservation (labelled domains): the target-domain classifier labels each translation;
  the fraction that keep their source image's class. A translator that draws any plausible
  target image scores about 1/num_classes here, however good its FID.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional

import torch
import torch.nn as nn

from ..data import ImageData, to_float_images
from ..loop.atomic import write_text_atomic
from ..metrics import DomainFeatures, DomainTrainSettings, FeatureDistance, load_or_train_domain_model
from ..metrics.bootstrap import BOOTSTRAP_LEVEL, BOOTSTRAP_RESAMPLES, bootstrap_intervals
from ..metrics.cache import data_fingerprint, resolve_cache_dir
from ..metrics.protocol import metric_protocol, real_data_protocol, weights_sha256
from ..metrics.split import split_indices

# A domain of the digits pair has ~720 training images: 12 passes (instead of the GAN path's 5)
# take the thick-stroke classifier from 0.97 to 0.99 held-out accuracy, and class preservation is
# only as trustworthy as that classifier.
CLASSIFIER = DomainTrainSettings(epochs=12)


@dataclass
class TranslationResult:
    fid: float  # translations vs the target's training images
    fid_at_floor_size: float  # the first num_floor translations vs the floor's reference
    fid_floor: float  # real target training subset vs held-out, num_floor each
    fid_untranslated: float  # the source images themselves vs the same reference
    num_translated: int
    num_reference: int
    num_floor: int
    classifier_accuracy: float  # the target-domain classifier on held-out target images
    class_preservation: Optional[float] = None  # labelled domains only
    fid_interval: List[float] = field(default_factory=list)  # bootstrap over the translations (metrics.bootstrap)
    protocol: Dict[str, object] = field(default_factory=dict)  # how FID was measured (metrics.protocol)


class TranslationEvaluator:
    """Scores generators that translate ``source`` images into the domain of ``target``.

    num_images: source images translated per evaluation (a fixed, seeded subset; all if fewer).
    cache_dir:  the classifier and reference statistics cache (default $GAN_ACCEL_CACHE or ~/.cache/gan_accel).
    device:     where the generator runs and the features are computed.
    min_classifier_accuracy: held-out accuracy below which the target classifier refuses to serve.
    """

    def __init__(
        self,
        source: ImageData,
        target: ImageData,
        num_images: int = 1000,
        cache_dir: Optional[str] = None,
        device=None,
        seed: int = 0,
        batch_size: int = 250,
        kid_subsets: int = 10,
        min_classifier_accuracy: float = 0.9,
    ) -> None:
        self.source = source
        self.target = target
        self.batch_size = batch_size
        self.device = torch.device(device or "cpu")
        train_idx, heldout_idx = split_indices(len(target))
        domain = load_or_train_domain_model(
            target, train_idx, heldout_idx, resolve_cache_dir(cache_dir), CLASSIFIER, self.device
        )
        domain.require_accuracy(min_classifier_accuracy, target.name)
        self.classifier = domain.classifier.eval()
        self.classifier_accuracy = domain.accuracy
        features = DomainFeatures(domain.classifier, domain.key).to(self.device).eval()
        self.distance = FeatureDistance(features, kid_subsets, seed, self.device)
        self.distance.set_reference(self._batches(target, train_idx))
        self.num_floor = min(num_images, len(heldout_idx), len(train_idx))
        self.floor_distance = FeatureDistance(features, kid_subsets, seed, self.device)
        self.floor_distance.set_reference(self._batches(target, train_idx[: self.num_floor]))
        self.fid_floor = self.floor_distance.score(self._batches(target, heldout_idx[: self.num_floor]))["fid"]
        gen = torch.Generator().manual_seed(seed)
        self.source_idx = torch.randperm(len(source), generator=gen)[:num_images]
        self.fid_untranslated = self.distance.score(self._batches(source, self.source_idx))["fid"]
        self.labelled = (
            source.labels is not None and target.labels is not None and source.class_names == target.class_names
        )
        self.protocol_base = dict(
            feature_extractor="domain",
            feature_weights_sha256=weights_sha256(features),
            **real_data_protocol(target, len(train_idx), data_fingerprint(target)),
            seed=seed,
            bootstrap_resamples=BOOTSTRAP_RESAMPLES,
            bootstrap_level=BOOTSTRAP_LEVEL,
        )
        self.seed = seed

    def _batches(self, data: ImageData, idx: torch.Tensor) -> Iterator[torch.Tensor]:
        for chunk in idx.split(self.batch_size):
            yield to_float_images(data.images[chunk]).to(self.device)

    @torch.no_grad()
    def evaluate(self, G: nn.Module) -> TranslationResult:
        """Scores of ``G`` (source image -> target image); G's train/eval mode is restored."""
        was_training = G.training
        G.eval()
        translations = torch.cat([G(x).float().clamp(-1, 1) for x in self._batches(self.source, self.source_idx)])
        G.train(was_training)
        scores = self.distance.score(translations.split(self.batch_size))
        same_size = self.floor_distance.score(translations[: self.num_floor].split(self.batch_size))
        preservation = None
        if self.labelled:
            preds = torch.cat([self.classifier(x).argmax(1).cpu() for x in translations.split(self.batch_size)])
            preservation = (preds == self.source.labels[self.source_idx]).float().mean().item()
        return TranslationResult(
            fid=scores["fid"],
            fid_at_floor_size=same_size["fid"],
            fid_floor=self.fid_floor,
            fid_untranslated=self.fid_untranslated,
            num_translated=int(scores["num_images"]),
            num_reference=self.distance.num_real,
            num_floor=self.num_floor,
            classifier_accuracy=self.classifier_accuracy,
            class_preservation=preservation,
            fid_interval=bootstrap_intervals(
                *self.distance.last_features(), seed=self.seed, estimates={"fid": scores["fid"]}
            )["fid"],
            protocol=metric_protocol(
                **self.protocol_base, num_real=self.distance.num_real, num_fake=int(scores["num_images"])
            ),
        )


def flat_metrics(results: Dict[str, TranslationResult], prefix: str = "eval/") -> Dict[str, float]:
    """``{"eval/A2B/fid": ..., "eval/B2A/class_preservation": ..., "eval/A2B/fid_ci_low": ...}`` for
    metrics.jsonl (the protocol is in eval_results.json)."""
    out = {}
    for direction, result in results.items():
        for key, value in asdict(result).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[f"{prefix}{direction}/{key}"] = float(value)
        if result.fid_interval:
            out[f"{prefix}{direction}/fid_ci_low"], out[f"{prefix}{direction}/fid_ci_high"] = result.fid_interval
    return out


def format_results(results: Dict[str, TranslationResult]) -> str:
    lines = []
    for direction, r in results.items():
        kept = f", class preservation {r.class_preservation:.3f}" if r.class_preservation is not None else ""
        lines.append(
            f"{direction}: FID {r.fid:.3f} ({r.fid_at_floor_size:.3f} at {r.num_floor} images; floor "
            f"{r.fid_floor:.3f}, untranslated {r.fid_untranslated:.3f}){kept}"
        )
    return "\n".join(lines)


def build_evaluators(
    domains,
    evaluate: bool,
    eval_every: int,
    num_images: int,
    cache_dir: str,
    device,
    seed: int,
    print_fn: Callable[[str], None],
) -> Dict[str, "TranslationEvaluator"]:
    """One evaluator per direction (its target-domain classifier and reference statistics are
    built once and cached); none when neither the final evaluation nor a periodic one is asked
    for, or when the domains carry no labels (the domain classifier's features need them)."""
    if not (evaluate or eval_every):
        return {}
    source_a, target_b = domains.eval_sets()
    if not domains.labelled:
        print_fn(
            "Evaluation skipped: it needs both domains labelled with the same classes "
            "(class sub-folders in trainA and trainB)"
        )
        return {}
    kwargs = dict(num_images=num_images, cache_dir=cache_dir, device=device, seed=seed)
    return {
        "A2B": TranslationEvaluator(source_a, target_b, **kwargs),
        "B2A": TranslationEvaluator(target_b, source_a, **kwargs),
    }


def write_results(results: Dict[str, TranslationResult], step: int, out: Path) -> Path:
    """``OUT/eval_results.json``: the step and both directions' results."""
    path = Path(out) / "eval_results.json"
    payload = {"step": step, **{k: asdict(v) for k, v in results.items()}}
    write_text_atomic(path, json.dumps(payload, indent=2) + "\n", "results")
    return path
