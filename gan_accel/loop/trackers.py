"""``--report_to``: every experiment tracker Accelerate supports, set up to write under the run
folder where the tracker writes locally, and sample grids logged as images where it takes them.

Accelerate drops a requested tracker whose package is missing with only a debug message, so a
run asked to log to MLflow would silently log nowhere; here a tracker named and not installed is
an error before anything is written, naming the package to install.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ConfigError, UserError

# --report_to name (Accelerate's LoggerType) -> the pip package that provides it.
TRACKER_PACKAGES = {
    "tensorboard": "tensorboard",
    "wandb": "wandb",
    "mlflow": "mlflow",
    "aim": "aim",
    "comet_ml": "comet-ml",
    "clearml": "clearml",
    "dvclive": "dvclive",
    "swanlab": "swanlab",
    "trackio": "trackio",
}
REPORT_TO_HELP = (
    "Experiment trackers, besides OUTPUT_DIR/metrics.jsonl: none, all (every installed one), or a "
    f"comma-separated list of {', '.join(TRACKER_PACKAGES)}."
)


def installed_trackers() -> list:
    """The trackers whose packages Accelerate finds in this environment, in TRACKER_PACKAGES' order."""
    from accelerate.tracking import get_available_trackers

    available = {str(t) for t in get_available_trackers()}
    return [name for name in TRACKER_PACKAGES if name in available]


def parse_report_to(value: str) -> list:
    """``--report_to`` -> tracker names: ``none`` -> [], ``all`` -> the installed ones, a list ->
    those, each checked to be known and installed (one line naming the pip install otherwise)."""
    names = list(dict.fromkeys(part.strip() for part in str(value).split(",") if part.strip()))
    if names in ([], ["none"]):
        return []
    if names == ["all"]:
        return installed_trackers()
    words = [n for n in names if n in ("none", "all")]
    if words:
        raise ConfigError(
            f"--report_to {value}: {' and '.join(words)} cannot be combined with other names; pass none, "
            "all, or a comma-separated list of trackers"
        )
    unknown = [n for n in names if n not in TRACKER_PACKAGES]
    if unknown:
        raise ConfigError(
            f"--report_to {value}: unknown tracker {', '.join(unknown)}; use none, all or a comma-separated "
            f"list of {', '.join(TRACKER_PACKAGES)}"
        )
    available = installed_trackers()
    missing = [n for n in names if n not in available]
    if missing:
        packages = " ".join(TRACKER_PACKAGES[n] for n in missing)
        raise ConfigError(
            f"--report_to {value}: {', '.join(missing)} is not installed; pip install {packages} "
            "(or choose another tracker)"
        )
    return list(dict.fromkeys(names))


def tracker_init_kwargs(names: list, output_dir: Path) -> dict:
    """Per-tracker settings that keep local files inside the run folder (instead of ./wandb,
    ./mlruns or ./dvclive in whatever folder the run was started from)."""
    output_dir = Path(output_dir)
    kwargs = {}
    if "wandb" in names:
        kwargs["wandb"] = {"dir": str(output_dir)}
    if "dvclive" in names:
        kwargs["dvclive"] = {"dir": str(output_dir / "dvclive")}
    return kwargs


def init_trackers(accelerator, project: str, config: dict, output_dir: Path) -> None:
    """``accelerator.init_trackers`` with :func:`tracker_init_kwargs`; MLflow without a
    ``MLFLOW_TRACKING_URI`` records into OUTPUT_DIR/mlruns (a local file store). A tracker that
    cannot start (no login, no server) is one line naming it."""
    names = [str(t) for t in getattr(accelerator, "log_with", []) or []]
    if "mlflow" in names and not os.environ.get("MLFLOW_TRACKING_URI") and accelerator.is_main_process:
        import mlflow

        mlflow.set_tracking_uri((Path(output_dir).resolve() / "mlruns").as_uri())
        # MLflow 3 refuses a file store unless told otherwise; a database backend would need
        # SQLAlchemy and a server-like set-up, for what is a run folder's private record.
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    error = None
    if accelerator.is_main_process:  # trackers live on the main process only
        try:
            accelerator.init_trackers(project, config=config, init_kwargs=tracker_init_kwargs(names, output_dir))
        except Exception as err:  # noqa: BLE001  # login, server and permission errors of nine packages
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            hint = "; for W&B without an account set WANDB_MODE=offline" if "wandb" in names else ""
            error = (
                f"--report_to {','.join(names)}: a tracker could not start ({reason}){hint}; "
                "or choose another --report_to"
            )
    if accelerator.num_processes > 1:
        from accelerate.utils import broadcast_object_list

        # The other ranks must fail with the main process, not wait for it at the next collective.
        error = broadcast_object_list([error])[0]
    if error:
        raise UserError(error)


def log_image(accelerator, key: str, image_file: Path, step: int) -> list:
    """Log the picture ``image_file`` (e.g. a sample grid) under ``key`` to every active tracker
    that takes images; the names of those it went to. Main process only (Accelerate's trackers
    live there); a tracker that fails to take it costs a warning, never the run."""
    if not accelerator.is_main_process or not accelerator.trackers:
        return []
    import numpy as np
    from PIL import Image

    with Image.open(image_file) as img:
        picture = img.convert("RGB")
    array = np.asarray(picture)  # [H, W, 3] uint8
    logged = []
    for tracker in accelerator.trackers:
        try:
            if _log_one(tracker, key, picture, array, step):
                logged.append(tracker.name)
        except Exception as err:  # noqa: BLE001  # a tracker's own failure must not end training
            print(f"warning: could not log {key} to {tracker.name} ({type(err).__name__}: {err})", flush=True)
    return logged


def _log_one(tracker, key: str, picture, array, step: int) -> bool:
    name = tracker.name
    if name == "tensorboard":
        tracker.writer.add_image(key, array, global_step=step, dataformats="HWC")
        tracker.writer.flush()
    elif name == "mlflow":  # Accelerate's MLflowTracker has no log_images
        import mlflow

        mlflow.log_image(picture, key=key.replace("/", "_"), step=step)
    elif name == "dvclive":
        tracker.live.log_image(f"{key.replace('/', '_')}_{step:06d}.png", picture)
    elif name == "comet_ml":
        tracker.writer.log_image(picture, name=key, step=step)
    elif name in ("aim", "clearml"):  # Accelerate's log_images; ClearML takes one array per key
        tracker.log_images({key: array if name == "clearml" else picture}, step=step)
    elif hasattr(tracker, "log_images"):  # wandb, swanlab: a list of pictures per key
        tracker.log_images({key: [picture]}, step=step)
    else:
        return False
    return True
