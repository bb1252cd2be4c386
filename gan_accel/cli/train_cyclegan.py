"""Train a CycleGAN (unpaired image-to-image translation):
gan-accel train-cyclegan (or accelerate launch / torchrun -m gan_accel.cli.train_cyclegan) [--config FILE] [flags]."""

from __future__ import annotations

from gan_accel.cyclegan.trainer import CycleGANTrainer

# Flags, --config, --dry_run, one-line errors and the run itself: gan_accel.runner.Task.
main = CycleGANTrainer.script(__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
