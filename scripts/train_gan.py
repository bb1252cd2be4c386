"""Train a GAN: python / accelerate launch / torchrun scripts/train_gan.py [--config FILE] [flags]."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout without install

from gan_accel.gan.trainer import GANTrainer  # noqa: E402

# Flags, --config, --dry_run, one-line errors and the run itself: gan_accel.runner.Task.
main = GANTrainer.script(__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
