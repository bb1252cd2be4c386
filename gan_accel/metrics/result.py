"""One GAN evaluation's figures (:class:`EvalResult`), its flat ``eval/`` keys, its printed
summary, and the saturation rule: when a metric says generated images are as close to the real
training images as held-out real ones are, it can no longer rank generators."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

from .bootstrap import BOOTSTRAP_LEVEL
from .protocol import protocol_id

# Metric name -> (reported value field, field compared with the real-vs-real interval, floor field) of
# the metrics with a real-vs-real floor. The compared value is measured at the floor's size, as the
# interval's draws are (gan_accel.metrics.real_draws): for FID and KID the first num_floor generated
# images against the floor's own real training images, since both are biased upwards at small sizes
# and the full-size value would look better than the floor from its sample size alone; the SWD is
# measured at that size already.
FLOORED = {
    "fid": ("fid", "fid_at_floor_size", "fid_floor"),
    "kid": ("kid_mean", "kid_at_floor_size_mean", "kid_floor_mean"),
    "swd": ("swd", "swd", "swd_floor"),
}


def is_saturated(value: Optional[float], floor: Optional[float], floor_interval: Optional[List[float]] = None) -> bool:
    """Whether ``value`` (lower is better, at the floor's size) lies inside or below the real-vs-real interval, i.e. is
    not above its high end (the floor itself when there is no interval): the metric then scores
    the generated images as it scores held-out real ones, and differences between generators are
    noise. A non-finite value never is (a diverged generator is not as good as real images), nor is
    one without a finite floor."""
    if value is None or not math.isfinite(value):
        return False
    high = floor_interval[1] if floor_interval else floor
    return high is not None and math.isfinite(high) and value <= high


@dataclass
class EvalResult:
    """One evaluation. Sizes are reported because FID is biased upwards at small sample sizes:
    compare a result only with results (and the floor) at similar sizes."""

    fid: float
    kid_mean: float
    kid_std: float  # across KID's random subsets
    fid_floor: float  # real training subset vs held-out real images, num_floor each
    kid_floor_mean: float
    kid_floor_std: float
    num_generated: int
    num_reference: int  # real training images behind the reference statistics
    num_floor: int
    feature_extractor: str
    classifier_accuracy: Optional[float] = None  # domain classifier, held-out split
    classifier_f1_macro: Optional[float] = None
    classes_covered: Optional[int] = None  # see gan_accel.metrics.coverage for the rule
    num_classes: Optional[int] = None
    coverage_kl: Optional[float] = None  # KL(real || generated), eps-smoothed
    class_histogram: Optional[List[float]] = None
    conditional_accuracy: Optional[float] = None  # conditional generators only
    # The like-for-like comparison with the floor: the first num_floor generated images against
    # the floor's own real reference (FID is biased upwards at small sizes, so compare these two).
    fid_at_floor_size: Optional[float] = None
    kid_at_floor_size_mean: Optional[float] = None
    # Fidelity and diversity apart (gan_accel.metrics.fidelity), in the same features as FID,
    # against as many real reference images as were generated.
    precision: Optional[float] = None
    recall: Optional[float] = None
    density: Optional[float] = None
    coverage: Optional[float] = None
    # {"fid": [low, high], "kid": ..., "precision": ...}: bootstrap intervals (gan_accel.metrics.bootstrap).
    intervals: Dict[str, List[float]] = field(default_factory=dict)
    # How these numbers were measured (gan_accel.metrics.protocol.metric_protocol).
    protocol: Dict[str, object] = field(default_factory=dict)
    # The sliced Wasserstein distance of Laplacian-pyramid patches (gan_accel.metrics.swd): the
    # first generated images against the floor's real training subset, as many as its held-out
    # side; None for images under 7 px.
    swd: Optional[float] = None
    swd_floor: Optional[float] = None  # real training subset vs held-out, the same images as fid_floor's
    swd_levels: Dict[str, float] = field(default_factory=dict)  # per pyramid level, keyed by its side
    # {"fid": [low, high], "kid": ..., "swd": ...}: the real-vs-real intervals (draws of real training
    # images against as many held-out ones, gan_accel.metrics.real_draws).
    floor_intervals: Dict[str, List[float]] = field(default_factory=dict)
    # The metrics of FLOORED whose value at the floor's size lies inside or below their real-vs-real
    # interval (is_saturated).
    saturated: List[str] = field(default_factory=list)

    def mark_saturated(self) -> None:
        """Fill :attr:`saturated` from the values at the floor's size, floors and floor intervals."""
        self.saturated = [
            name
            for name, (_, compared, floor) in FLOORED.items()
            if is_saturated(getattr(self, compared), getattr(self, floor), self.floor_intervals.get(name))
        ]

    def flat(self, prefix: str = "eval/") -> Dict[str, float]:
        """The scalar figures as floats under namespaced keys (for trackers and metrics.jsonl), with
        each interval as ``eval/<metric>_ci_low``/``_ci_high``, each real-vs-real interval as
        ``eval/<metric>_floor_ci_low``/``_high``, ``eval/<metric>_saturated`` (1.0 or 0.0) for FID, KID
        and SWD, and ``eval/protocol_id``: the protocol's 12 hex digits read as an integer (the full
        protocol is in CACHE_DIR/protocol/<hex>.json)."""
        out = {}
        for key, value in asdict(self).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[prefix + key] = float(value)
        for name, (low, high) in self.intervals.items():
            out[f"{prefix}{name}_ci_low"] = float(low)
            out[f"{prefix}{name}_ci_high"] = float(high)
        for name, (low, high) in self.floor_intervals.items():
            out[f"{prefix}{name}_floor_ci_low"] = float(low)
            out[f"{prefix}{name}_floor_ci_high"] = float(high)
        for name, (value, _, _) in FLOORED.items():
            if getattr(self, value) is not None:
                out[f"{prefix}{name}_saturated"] = float(name in self.saturated)
        if self.protocol:
            # 12 hex digits are 48 bits: exact in a float64, so the id survives JSON and trackers.
            out[prefix + "protocol_id"] = float(int(protocol_id(self.protocol), 16))
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
        lines.append(
            f"coverage: {result.classes_covered}/{result.num_classes} classes, KL(real||gen) {result.coverage_kl:.4f}; "
            f"domain classifier held-out accuracy {result.classifier_accuracy:.4f}"
        )
    if result.conditional_accuracy is not None:
        lines.append(f"conditional accuracy: {result.conditional_accuracy:.4f}")
    if result.precision is not None:
        ci = result.intervals

        def shown(name: str) -> str:
            value = getattr(result, name)
            return f"{name} {value:.3f}" + (f" [{ci[name][0]:.3f}, {ci[name][1]:.3f}]" if name in ci else "")

        lines.append(", ".join(shown(name) for name in ("precision", "recall", "density", "coverage")))
    if result.intervals.get("fid"):
        level = result.protocol.get("bootstrap", {}).get("level", BOOTSTRAP_LEVEL)
        fid_low, fid_high = result.intervals["fid"]
        kid_low, kid_high = result.intervals["kid"]
        lines.append(
            f"{level:.0%} bootstrap interval: FID [{fid_low:.4f}, {fid_high:.4f}]  KID [{kid_low:.5f}, {kid_high:.5f}]"
        )
    return "\n".join([*lines, *panel_lines(result)])


def panel_lines(result: EvalResult) -> List[str]:
    """FID, KID and SWD, each with its interval, its real-vs-real floor and interval, the value at
    the floor's size where it differs from the reported one, and whether it is saturated (then it no
    longer tells generated from real images)."""

    def interval(pair: Optional[List[float]]) -> str:
        return f"[{pair[0]:.4g}, {pair[1]:.4g}]" if pair else "[-]"

    lines = [
        "panel (lower is better; saturated: at the floor's size, inside or below its real-vs-real interval, "
        "so it no longer ranks):"
    ]
    for name, (value_field, compared_field, floor_field) in FLOORED.items():
        value, compared, floor = (getattr(result, f) for f in (value_field, compared_field, floor_field))
        if value is None:
            continue
        state = "SATURATED" if name in result.saturated else "separates"
        at_size = f"  at floor size {compared:.4g}" if compared_field != value_field and compared is not None else ""
        lines.append(
            f"  {name.upper()} {value:.4g} {interval(result.intervals.get(name))}  floor {floor:.4g} "
            f"{interval(result.floor_intervals.get(name))}{at_size}  {state}"
        )
    return lines
