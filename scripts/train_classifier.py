"""Fine-tune a sequence classifier: python / accelerate launch / torchrun scripts/train_classifier.py
[--config FILE] --train_file train.csv --validation_file dev.csv --output_dir runs/x [flags]."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout without install

from gan_accel.classifier.train import ClassifierTrainer  # noqa: E402

# Flags, --config, --dry_run, one-line errors and the run itself: gan_accel.runner.Task.
main = ClassifierTrainer.script(__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
