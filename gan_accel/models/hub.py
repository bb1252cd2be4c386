"""Model cards and uploads for exports: a ``README.md`` in the Hugging Face model-card format (YAML
metadata, a sample grid, the training settings, the metrics with how they were measured, the
``from_pretrained`` line that loads it) and ``--push_to_hub`` through ``huggingface_hub``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Optional, Sequence

import torch.nn as nn

from ..errors import UserError

CARD = "README.md"
SAMPLES = "samples.png"
# The Hub's ids of the datasets that --dataset names (the others have none: digits is
# scikit-learn's, folder/imagefolder are the user's own images).
HUB_DATASETS = {"mnist": "ylecun/mnist", "cifar10": "uoft-cs/cifar10"}
# Where each network class is imported from in the card's loading snippet.
MODULES = {
    "DCGANGenerator": "gan_accel.models.dcgan",
    "ResNetGenerator": "gan_accel.models.resnet",
    "FastGANGenerator": "gan_accel.models.fastgan",
    "ResnetGenerator": "gan_accel.cyclegan.models",
}


def hub_dataset(run_config: dict) -> Optional[str]:
    """The Hub id of the training data, when it has one."""
    return run_config.get("dataset_name") or HUB_DATASETS.get(run_config.get("dataset", ""))


def loading_snippet(G: nn.Module, model_id: str, translator: bool) -> str:
    """Python that loads the export from ``model_id`` (a Hub repo id or a local folder) and runs it."""
    cls = type(G).__name__
    lines = [
        f"from {MODULES.get(cls, type(G).__module__)} import {cls}",
        "",
        f"G = {cls}.from_pretrained({model_id!r}).eval()",
    ]
    if translator:
        lines += [
            "x = torch.rand(1, G.channels, 64, 64) * 2 - 1  # an image in [-1, 1], [B, C, H, W]",
            "y = G(x)  # the translated image, same shape",
        ]
    else:
        labels = "torch.arange(4) % G.num_classes" if getattr(G, "num_classes", 0) else "None"
        lines += ["z = torch.randn(4, G.z_dim)", f"images = G(z, {labels})  # [4, C, H, W] in [-1, 1]"]
    return "\n".join(["import torch", *lines])


def metrics_section(metrics: Sequence[dict]) -> str:
    """A table of ``{name, value, protocol}`` entries, then each protocol in full (the numbers are
    comparable only with numbers measured the same way)."""
    if not metrics:
        return "No metric was measured for this export."
    rows = ["| metric | value |", "|---|---|"] + [f"| {m['name']} | {m['value']} |" for m in metrics]
    protocols = [
        f"- **{m['name']}**: `{json.dumps(m['protocol'], sort_keys=True, default=str)}`"
        for m in metrics
        if m.get("protocol")
    ]
    return "\n".join(rows + (["", "Protocol (how each number was measured):", *protocols] if protocols else []))


def card_metrics(results) -> list:
    """``[{name, value, protocol}]`` for :func:`write_model_card` from an evaluation: an
    ``eval_results.json`` dict (scripts/evaluate_gan.py), ``dataclasses.asdict`` of a
    :class:`gan_accel.metrics.evaluator.EvalResult`, or the EvalResult itself. Each metric's protocol
    is the evaluation's, plus its own bootstrap interval when there is one."""
    import dataclasses

    from ..metrics.protocol import reported_metrics

    if dataclasses.is_dataclass(results):
        results = dataclasses.asdict(results)
    protocol = dict(results.get("protocol") or {})
    return [
        {"name": name, "value": value, "protocol": {**protocol, **({"interval": interval} if interval else {})}}
        for name, value, interval in reported_metrics(results)
    ]


def settings_block(run_config: dict) -> str:
    if not run_config:
        return "Not recorded (this export was written outside a training run)."
    return "```json\n" + json.dumps(run_config, indent=2, sort_keys=True, default=str) + "\n```"


def build_model_card(
    G: nn.Module,
    model_id: str,
    run_config: Optional[dict] = None,
    metrics: Optional[Sequence[dict]] = None,
    translator: bool = False,
    has_samples: bool = True,
):
    """The card as a :class:`huggingface_hub.ModelCard`. ``metrics``: ``[{name, value, protocol}]``,
    ``protocol`` a dict (feature extractor, counts, split, seed...) stored as the metric's
    ``metric_args`` in the model-index metadata and printed in the body."""
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

    run_config = run_config or {}
    metrics = list(metrics or [])
    task = "image-to-image" if translator else "unconditional-image-generation"
    dataset = hub_dataset(run_config)
    conditional = bool(getattr(G, "num_classes", 0))
    tags = [
        "gan_accel",
        "gan",
        "cyclegan" if translator else getattr(G, "arch", "gan"),
        "pytorch_model_hub_mixin",
        "model_hub_mixin",
        *(["class-conditional"] if conditional else []),
    ]
    results = [
        EvalResult(
            task_type=task,
            dataset_type=dataset or "custom",
            dataset_name=dataset or str(run_config.get("dataset", "custom")),
            metric_type=m["name"].lower(),
            metric_name=m["name"],
            metric_value=m["value"],
            metric_args=m.get("protocol") or None,
        )
        for m in metrics
    ]
    data = ModelCardData(
        library_name="pytorch",
        tags=tags,
        pipeline_tag=task,
        datasets=[dataset] if dataset else None,
        model_name=Path(model_id).name if results else None,
        eval_results=results or None,
    )
    what = (
        "a CycleGAN translator (" + str(run_config.get("direction", getattr(G, "direction", ""))) + ")"
        if translator
        else ("a class-conditional" if conditional else "an unconditional") + " image generator"
    )
    source = dataset or run_config.get("dataset") or "unrecorded data"
    body = [
        f"# {Path(model_id).name}",
        "",
        f"This is {what} trained with gan_accel on {source}: "
        "safetensors weights and `config.json` written by `PyTorchModelHubMixin`.",
        "",
        *([f"![samples]({SAMPLES})", ""] if has_samples else []),
        "## How to load it",
        "",
        "`pip install gan_accel` (or a checkout on `PYTHONPATH`), then:",
        "",
        "```python",
        loading_snippet(G, model_id, translator),
        "```",
        "",
        "From the command line: `gan-accel sample-gan --generator FOLDER --num_images 16 --output_dir out`"
        if not translator
        else "From the command line: `gan-accel translate --generator FOLDER ...`",
        "",
        "## Metrics",
        "",
        metrics_section(metrics),
        "",
        "## Training settings",
        "",
        settings_block(run_config),
        "",
    ]
    return ModelCard("---\n" + data.to_yaml() + "\n---\n\n" + "\n".join(body))


def card_model_id(final_path: Path, run_config: Optional[dict], repo_suffix: str = "") -> str:
    """Where the card's loading line loads from: the Hub repo when the run pushes there, else
    the export folder itself (so the line works as written on this machine)."""
    run_config = run_config or {}
    if run_config.get("push_to_hub") and run_config.get("hub_model_id"):
        return run_config["hub_model_id"] + repo_suffix
    return str(Path(final_path).resolve())


def write_model_card(
    folder: Path,
    G: nn.Module,
    model_id: str,
    run_config: Optional[dict] = None,
    metrics: Optional[Sequence[dict]] = None,
    translator: bool = False,
    samples=None,
) -> Path:
    """Write ``README.md`` (and ``samples.png``) into an export ``folder``. ``samples``: a picture to
    show, ``(images [N, C, H, W] in [-1, 1], nrow)`` (drawn from G for generators when not given)
    or an image file to copy (a translator's last sample grid); none when neither is available."""
    folder = Path(folder)
    if samples is None and not translator:
        samples = card_samples(G)
    if isinstance(samples, (str, Path)):
        shutil.copyfile(samples, folder / SAMPLES)
    elif samples is not None:
        from ..sampling import save_grid

        save_grid(samples[0], folder / SAMPLES, nrow=samples[1])
    card = build_model_card(G, model_id, run_config, metrics, translator, has_samples=samples is not None)
    card.save(folder / CARD)
    return folder / CARD


def card_samples(G: nn.Module) -> tuple:
    """``(images, nrow)``: 16 images from seeds 0-15 (scripts/sample_gan.py's seeds, so a user can
    regenerate any of them), or for a conditional generator a row per class (at most 10)."""
    import torch

    from ..sampling import generate_from_latents, seed_latent

    num_classes = getattr(G, "num_classes", 0)
    if num_classes:
        rows = min(num_classes, 10)
        z = torch.stack([seed_latent(s, G.z_dim) for s in range(8)]).repeat(rows, 1)
        labels = torch.arange(rows).repeat_interleave(8)
        return generate_from_latents(G, z, labels), 8
    z = torch.stack([seed_latent(s, G.z_dim) for s in range(16)])
    return generate_from_latents(G, z, None), 4


def push_export(folder: Path, repo_id: str, token: Optional[str] = None, private: bool = False, api=None) -> str:
    """Create ``repo_id`` if needed and upload ``folder`` (weights, config.json, README.md,
    samples.png) as one commit; the URL of the commit. Network or permission failures are one
    line, and the export stays on disk."""
    from huggingface_hub import HfApi

    api = api or HfApi(token=token)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        commit = api.upload_folder(
            repo_id=repo_id,
            folder_path=str(folder),
            repo_type="model",
            commit_message=f"Upload {Path(folder).name} (gan_accel export)",
        )
    except Exception as err:  # noqa: BLE001  # HTTP, connection, auth and validation errors all end here
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UserError(
            f"--push_to_hub: uploading {folder} to {repo_id} failed ({reason}); the export is kept "
            "on disk: check the token (--hub_token or `hf auth login`) and upload it again"
        ) from None
    return str(getattr(commit, "commit_url", commit))


def publish(folder: Path, run, suffix: str = "") -> Optional[str]:
    """``--push_to_hub``: upload the export ``folder`` to ``--hub_model_id`` + ``suffix`` (e.g.
    ``-A2B`` for the second translator of a CycleGAN run); nothing otherwise."""
    if not getattr(run, "push_to_hub", False):
        return None
    repo_id = run.hub_model_id + suffix
    retarget_card(Path(folder), repo_id)
    url = push_export(Path(folder), repo_id, token=run.hub_token, private=run.hub_private)
    print(f"Pushed {folder} to https://huggingface.co/{run.hub_model_id + suffix} ({url})", flush=True)
    return url


def retarget_card(folder: Path, repo_id: str) -> None:
    """Point the card's loading line at ``repo_id``: a card written before the upload was decided
    (an export pushed later, with scripts/export_onnx.py) loads from the local folder."""
    card = Path(folder) / CARD
    if card.is_file():
        text = card.read_text()
        card.write_text(re.sub(r"\.from_pretrained\((['\"]).*?\1\)", f".from_pretrained({repo_id!r})", text))
