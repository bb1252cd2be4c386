"""Fine-tune a sequence classifier: python / accelerate launch / torchrun scripts/train_classifier.py
[--config FILE] --train_file train.csv --validation_file dev.csv --output_dir runs/x [flags]."""

# Kept for existing commands and job scripts: the command is gan_accel.cli.train_classifier, on the PATH
# as `gan-accel train-classifier` once the package is installed.
from gan_accel.cli.train_classifier import __doc__, main  # noqa: F401 (the docstring is the --help text)

if __name__ == "__main__":
    raise SystemExit(main())
