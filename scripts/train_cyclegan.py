"""Train a CycleGAN (unpaired image-to-image translation):
python / accelerate launch / torchrun scripts/train_cyclegan.py [--config FILE] [flags]."""

# Kept for existing commands and job scripts: the command is gan_accel.cli.train_cyclegan, on the PATH
# as `gan-accel train-cyclegan` once the package is installed.
from gan_accel.cli.train_cyclegan import __doc__, main  # noqa: F401 (the docstring is the --help text)

if __name__ == "__main__":
    raise SystemExit(main())
