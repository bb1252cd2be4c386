"""Train a GAN: python / accelerate launch / torchrun scripts/train_gan.py [--config FILE] [flags]."""

# Kept for existing commands and job scripts: the command is gan_accel.cli.train_gan, on the PATH
# as `gan-accel train-gan` once the package is installed.
from gan_accel.cli.train_gan import __doc__, main  # noqa: F401 (the docstring is the --help text)

if __name__ == "__main__":
    raise SystemExit(main())
