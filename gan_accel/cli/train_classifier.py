"""Fine-tune a sequence classifier: gan-accel train-classifier (or accelerate launch / torchrun -m gan_accel.cli.train_classifier)
[--config FILE] --train_file train.csv --validation_file dev.csv --output_dir runs/x [flags]."""

from __future__ import annotations

from gan_accel.classifier.train import ClassifierTrainer

# Flags, --config, --dry_run, one-line errors and the run itself: gan_accel.runner.Task.
main = ClassifierTrainer.script(__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
