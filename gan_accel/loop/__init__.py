"""Loop utilities shared by every training path (GAN, CycleGAN, classifier, distillation): accelerator set-up, run
folder, progress and metrics, checkpoints, signals, non-finite guard."""

from .accel import build_accelerator, prepare_output_dir, print_and_save_config
from .checkpoint import CheckpointManager
from .guard import NonFiniteGuard, all_finite
from .lock import RunLock
from .metrics_log import MetricsLogger
from .plots import plot_metrics
from .run import TrainingRun
from .signals import GracefulStop
from .state import TrainState

__all__ = [
    "CheckpointManager",
    "GracefulStop",
    "MetricsLogger",
    "NonFiniteGuard",
    "RunLock",
    "TrainState",
    "TrainingRun",
    "all_finite",
    "build_accelerator",
    "plot_metrics",
    "prepare_output_dir",
    "print_and_save_config",
]
