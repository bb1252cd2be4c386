"""Loop utilities shared by every training path (GAN and classifier): accelerator set-up, run
folder, progress and metrics, checkpoints, signals, non-finite guard."""
from .accel import build_accelerator, prepare_output_dir, print_and_save_config
from .checkpoint import CheckpointManager
from .guard import NonFiniteGuard, all_finite
from .metrics_log import MetricsLogger
from .run import TrainingRun
from .signals import GracefulStop
from .state import TrainState

__all__ = [
    "CheckpointManager", "GracefulStop", "MetricsLogger", "NonFiniteGuard", "TrainState", "TrainingRun", "all_finite",
    "build_accelerator", "prepare_output_dir", "print_and_save_config",
]
