"""--report_to: every tracker Accelerate supports, checked offline with the ones installed here
(TensorBoard event files, MLflow's local file store, W&B offline mode; each skipped when its
package is absent): the run's scalars and its sample grids as images; a tracker named and not
installed is one line naming the pip install, before anything is written."""

import os

import pytest

from gan_accel.errors import ConfigError
from gan_accel.loop import trackers
from helpers import TINY_GAN, load_script
from run_fixtures import run_gan, user_error

train_gan = load_script("train_gan").main
OFFLINE = [name for name in ("tensorboard", "mlflow", "wandb") if name in trackers.installed_trackers()]


def test_parse_report_to(monkeypatch):
    monkeypatch.setattr(trackers, "installed_trackers", lambda: ["tensorboard", "mlflow"])
    assert trackers.parse_report_to("none") == []
    assert trackers.parse_report_to("all") == ["tensorboard", "mlflow"]
    assert trackers.parse_report_to("mlflow, tensorboard,mlflow") == ["mlflow", "tensorboard"]
    with pytest.raises(ConfigError, match="wandb is not installed; pip install wandb"):
        trackers.parse_report_to("tensorboard,wandb")
    with pytest.raises(ConfigError, match="comet_ml is not installed; pip install comet-ml"):
        trackers.parse_report_to("comet_ml")
    with pytest.raises(ConfigError, match="unknown tracker mlfow"):
        trackers.parse_report_to("mlfow")
    for value, words in (("all,none", "all and none"), ("tensorboard,all", "all"), ("none, mlflow", "none")):
        with pytest.raises(ConfigError, match=f"--report_to {value}: {words} cannot be combined with other names"):
            trackers.parse_report_to(value)


def test_uninstalled_tracker_is_one_line_before_anything_is_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(trackers, "installed_trackers", lambda: ["tensorboard"])
    line = user_error(train_gan, [*TINY_GAN, "--output_dir", str(tmp_path / "run"), "--report_to", "mlflow"], capsys)
    assert line == (
        "error: --report_to mlflow: mlflow is not installed; pip install mlflow (or choose another tracker)"
    )
    assert not (tmp_path / "run").exists()


@pytest.fixture(scope="module")
def tracked_run(tmp_path_factory):
    """One tiny run logging to every offline-capable tracker installed, a sample grid at steps 2 and 4."""
    if not OFFLINE:
        pytest.skip("no offline tracker installed (pip install 'gan_accel[trackers]')")
    out = tmp_path_factory.mktemp("tracked") / "run"
    saved = {key: os.environ.get(key) for key in ("WANDB_MODE", "WANDB_SILENT", "MLFLOW_TRACKING_URI")}
    os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true")
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    try:
        assert run_gan(out, "--sample_every", "2", "--report_to", ",".join(OFFLINE)) == 0
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
    return out


def need(name):
    if name not in OFFLINE:
        pytest.skip(f"{name} is not installed")


def test_tensorboard_gets_scalars_and_the_sample_grids(tracked_run):
    need("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tracked_run / "logs" / "gan"), size_guidance={"images": 0}).Reload()
    assert "loss/D" in events.Tags()["scalars"]
    grids = events.Images("samples")
    assert [g.step for g in grids][:2] == [2, 4] and grids[0].width == 4 * 18 + 2  # TINY_GAN: 16 samples, 4 x 4


def test_mlflow_local_store_gets_metrics_params_and_images(tracked_run):
    need("mlflow")
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=(tracked_run / "mlruns").resolve().as_uri())
    (run,) = client.search_runs([e.experiment_id for e in client.search_experiments() if e.name == "gan"])
    assert [m.step for m in client.get_metric_history(run.info.run_id, "loss/D")] == [1, 2, 3, 4]
    assert run.data.params["max_steps"] == "4"
    images = [a.path for a in client.list_artifacts(run.info.run_id, "images")]
    assert any("samples+step+2+" in p and p.endswith(".png") for p in images), images


def test_wandb_offline_run_gets_the_sample_grids(tracked_run):
    need("wandb")
    (run_dir,) = (tracked_run / "wandb").glob("offline-run-*")
    assert len(list((run_dir / "files" / "media" / "images").glob("samples_*.png"))) >= 2


def test_a_tracker_that_cannot_start_is_one_line(tmp_path, capsys, monkeypatch):
    need("mlflow")
    import mlflow

    def refuse(*args, **kwargs):
        raise PermissionError("the tracking server refused the login")

    monkeypatch.setattr(mlflow, "search_experiments", refuse)
    line = user_error(train_gan, [*TINY_GAN, "--output_dir", str(tmp_path / "run"), "--report_to", "mlflow"], capsys)
    assert "--report_to mlflow: a tracker could not start (the tracking server refused the login)" in line
    assert not (tmp_path / "run" / "config.json").exists()  # the same command runs once the login is fixed
