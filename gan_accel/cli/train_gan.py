"""Train a GAN: gan-accel train-gan (or accelerate launch / torchrun -m gan_accel.cli.train_gan) [--config FILE] [flags]."""

from __future__ import annotations

from gan_accel.gan.trainer import GANTrainer

# Flags, --config, --dry_run, one-line errors and the run itself: gan_accel.runner.Task.
main = GANTrainer.script(__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
