"""Train a CycleGAN (unpaired image-to-image translation):
python / accelerate launch / torchrun scripts/train_cyclegan.py [--config FILE] [flags]."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout without install

from gan_accel.cyclegan.trainer import CycleGANTrainer  # noqa: E402

# Flags, --config, --dry_run, one-line errors and the run itself: gan_accel.runner.Task.
main = CycleGANTrainer.script(__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
