"""The metric protocol: how a FID/KID/precision/recall number was measured, written beside it.

GAN metrics measured differently are not comparable: FID falls as the sample counts grow, moves
with the feature network's weights, the resize path and the real split. Every result therefore
carries a protocol dict (:func:`metric_protocol`), and :func:`compare_protocols` says whether
two results can be compared and, if not, which fields differ (``scripts/compare_metrics.py``).
:func:`format_metrics` renders numbers with their intervals and protocol (for a model card).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple

if TYPE_CHECKING:  # torch only where weights are hashed: `compare-metrics` reads JSON and starts at once
    import torch.nn as nn

PROTOCOL_VERSION = 1
# Fields that change the numbers themselves; any difference makes two results incomparable.
MUST_MATCH = (
    "protocol_version",
    "feature_extractor",
    "feature_weights_sha256",
    "resize",
    "image_size",
    "channels",
    "dataset",
    "data_sha256",
    "real_split",
    "real_split_size",
    "num_real",
    "num_fake",
    "k_precision_recall",
    "k_density_coverage",
    "kid_subset_size",
)
# Fields that only change the random draw or the interval: results stay comparable (within the intervals).
INFORMATIONAL = ("seed", "bootstrap")
# The numbers a protocol is attached to, in the order they are shown.
METRIC_NAMES = ("fid", "kid_mean", "precision", "recall", "density", "coverage", "swd")
INTERVAL_NAMES = {"kid_mean": "kid"}  # the interval key of a metric, where it differs from its name


def weights_sha256(module: nn.Module) -> str:
    """sha256 over the module's ``state_dict`` (names, dtypes, shapes and bytes, in key order): two
    extractors with the same hash compute the same features."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        tensor = tensor.detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        # As raw bytes: numpy has no bfloat16, and the bytes are what the features depend on.
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def resize_path(feature_extractor: str, image_size: int) -> str:
    """How real and generated images reach the feature network, in words (part of the protocol)."""
    images = (
        f"real: decoded to uint8, shorter side resized to {image_size} px (bilinear, antialiased when "
        f"shrinking) and centre-cropped; generated: {image_size} px as the generator makes them, "
        "clamped to [-1, 1]"
    )
    if feature_extractor == "inception":
        return (
            f"{images}; both quantised to uint8, grey repeated to RGB, resized to 299x299 by torch-fidelity's "
            "TF1-compatible bilinear (Inception-v3 pool3, 2048 features)"
        )
    return f"{images}; domain classifier features at {image_size} px, no resize"


def real_data_protocol(real, train_size: int, fingerprint: str) -> Dict[str, Any]:
    """The real-data fields of a protocol for ``real`` (an ImageData) whose reference comes from the
    training part (``train_size`` images) of the fixed split (gan_accel.metrics.split)."""
    from .split import SPLIT_SEED

    return {
        "image_size": int(real.images.shape[-1]),
        "channels": int(real.images.shape[1]),
        "dataset": real.name,
        "data_sha256": fingerprint,
        "real_split": f"train: {train_size} of {len(real)} images, split seed {SPLIT_SEED}",
        "real_split_size": train_size,
    }


def metric_protocol(
    *,
    feature_extractor: str,
    feature_weights_sha256: str,
    image_size: int,
    channels: int,
    dataset: str,
    data_sha256: str,
    real_split: str,
    real_split_size: int,
    num_real: int,
    num_fake: int,
    seed: int,
    bootstrap_resamples: int,
    bootstrap_level: float,
    k_precision_recall: Optional[int] = None,
    k_density_coverage: Optional[int] = None,
    kid_subset_size: Optional[int] = None,
) -> Dict[str, Any]:
    """The protocol dict written beside every result (JSON-serialisable; see MUST_MATCH for what matters).

    num_real:  real images behind FID/KID (precision/recall use as many real as generated images).
    real_split: which part of the real data the reference comes from (the held-out part never does).
    The k's and the KID subset size are None where those metrics are not reported.
    """
    return {
        "protocol_version": PROTOCOL_VERSION,
        "feature_extractor": feature_extractor,
        "feature_weights_sha256": feature_weights_sha256,
        "resize": resize_path(feature_extractor, image_size),
        "image_size": image_size,
        "channels": channels,
        "dataset": dataset,
        "data_sha256": data_sha256,
        "real_split": real_split,
        "real_split_size": real_split_size,
        "num_real": num_real,
        "num_fake": num_fake,
        "seed": seed,
        "k_precision_recall": k_precision_recall,
        "k_density_coverage": k_density_coverage,
        "kid_subset_size": kid_subset_size,
        "bootstrap": {
            "resamples": bootstrap_resamples,
            "level": bootstrap_level,
            "over": "generated samples (FID, KID, precision, density); real samples (recall, coverage)",
        },
    }


def protocol_id(protocol: Mapping[str, Any]) -> str:
    """12 hex digits naming the fields that must match: equal ids, comparable results."""
    must = {key: protocol.get(key) for key in MUST_MATCH}
    return hashlib.sha256(json.dumps(must, sort_keys=True).encode()).hexdigest()[:12]


def save_protocol(cache_dir, protocol: Mapping[str, Any]) -> None:
    """CACHE_DIR/protocol/<id>.json, so the ``eval/protocol_id`` logged during training names a
    readable file (metrics.jsonl and trackers hold numbers only)."""
    path = cache_dir / "protocol" / f"{protocol_id(protocol)}.json"
    if not path.is_file():
        from ..loop.atomic import write_text_atomic  # on use: compare-metrics reads protocols without torch

        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(protocol, indent=2) + "\n", "metric protocol")


def compare_protocols(a: Mapping[str, Any], b: Mapping[str, Any]) -> Tuple[bool, List[str], List[str]]:
    """``(comparable, reasons, notes)``: reasons name each MUST_MATCH field that differs (with both
    values); notes name informational differences (another seed: compare within the intervals)."""
    reasons = [f"{key}: {a.get(key)!r} vs {b.get(key)!r}" for key in MUST_MATCH if a.get(key) != b.get(key)]
    notes = [f"{key}: {a.get(key)!r} vs {b.get(key)!r}" for key in INFORMATIONAL if a.get(key) != b.get(key)]
    return not reasons, reasons, notes


def reported_metrics(results: Mapping[str, Any]) -> Iterator[Tuple[str, float, Optional[List[float]]]]:
    """``(name, value, interval or None)`` of each metric in ``results``, in METRIC_NAMES order."""
    intervals = results.get("intervals") or {}
    for name in METRIC_NAMES:
        if results.get(name) is not None:
            yield name, float(results[name]), intervals.get(INTERVAL_NAMES.get(name, name))


def format_metrics(results: Mapping[str, Any], markdown: bool = True) -> str:
    """Metrics with their intervals and protocol, for a model card or a terminal.

    results: an ``eval_results.json`` dict (evaluate_gan.py) or any dict with the metric names as
    keys, ``intervals`` (``{"fid": [low, high], ...}``) and ``protocol`` (:func:`metric_protocol`).
    Returns a Markdown table and list (``markdown=False``: plain lines).
    """
    protocol: Optional[Mapping[str, Any]] = results.get("protocol")
    level = protocol["bootstrap"]["level"] if protocol else None
    rows = [
        (name, f"{value:.4g}", f"[{interval[0]:.4g}, {interval[1]:.4g}]" if interval else "-")
        for name, value, interval in reported_metrics(results)
    ]
    header = f"{int(level * 100)}% interval" if level else "interval"
    if markdown:
        lines = [f"| metric | value | {header} |", "|---|---|---|", *[f"| {n} | {v} | {i} |" for n, v, i in rows]]
    else:
        lines = [f"{n}: {v} {header} {i}" for n, v, i in rows]
    if protocol:
        lines.append("")
        name = protocol_id(protocol)
        lines.append(f"Measured with (protocol {name}):" if markdown else f"protocol {name}:")
        for key, value in protocol.items():
            lines.append(f"- {key}: {value}" if markdown else f"  {key}: {value}")
    return "\n".join(lines)


def load_result(path: str) -> Dict[str, Any]:
    """A result file with a protocol: an ``eval_results.json`` (evaluate_gan.py) or a protocol file
    (CACHE_DIR/protocol/<id>.json, named by ``eval/protocol_id`` in a training run's metrics.jsonl).
    Always ``{..., "protocol": {...}}``; a :class:`UserError` in one line otherwise."""
    from pathlib import Path

    from ..errors import UserError

    file = Path(path)
    if not file.is_file():
        what = "a folder" if file.is_dir() else "not found"
        raise UserError(f"{path}: {what}; pass an eval_results.json written by gan-accel evaluate-gan")
    try:
        data = json.loads(file.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"{path}: not a JSON file ({err}); pass an eval_results.json") from None
    if isinstance(data, dict) and "protocol_version" in data:
        return {"protocol": data}
    if not isinstance(data, dict) or not isinstance(data.get("protocol"), dict) or not data["protocol"]:
        raise UserError(
            f"{path}: no metric protocol in it (written before protocols existed, or not an evaluation); "
            "re-run gan-accel evaluate-gan on the generator"
        )
    check_metric_values(path, data)
    return data


def check_metric_values(path: str, data: Mapping[str, Any]) -> None:
    """Every metric a number and every interval a pair of numbers, or one line naming the file and key."""
    from ..errors import UserError

    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    for name in METRIC_NAMES:
        if data.get(name) is not None and not number(data[name]):
            raise UserError(f"{path}: {name} is {data[name]!r}, not a number; pass the eval_results.json as written")
    intervals = data.get("intervals") or {}
    if not isinstance(intervals, dict):
        raise UserError(f"{path}: intervals is {intervals!r}, not a mapping; pass the eval_results.json as written")
    for name, interval in intervals.items():
        if not (isinstance(interval, list) and len(interval) == 2 and all(map(number, interval))):
            raise UserError(
                f"{path}: intervals.{name} is {interval!r}, not [low, high]; pass the eval_results.json as written"
            )


def model_index_metrics(results: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The ``metrics`` list of a Hugging Face model card's ``model-index`` entry: one
    ``{"type", "value", "name"}`` per reported metric, the name saying how it was measured (features,
    counts, interval and protocol id), since the card's metadata has no other place for it."""
    protocol = results.get("protocol") or {}
    level = protocol.get("bootstrap", {}).get("level", 0.95)
    measured = ""
    if protocol:
        measured = (
            f"{protocol['feature_extractor']} features, {protocol['num_fake']} generated vs "
            f"{protocol['num_real']} real, protocol {protocol_id(protocol)}"
        )
    out = []
    for name, value, interval in reported_metrics(results):
        details = [measured] if measured else []
        if interval:
            details.append(f"{level:.0%} interval [{interval[0]:.4g}, {interval[1]:.4g}]")
        label = name.upper() if name in ("fid", "kid_mean") else name
        out.append({"type": name, "value": value, "name": f"{label} ({'; '.join(details)})" if details else label})
    return out
