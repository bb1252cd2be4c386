"""Fine-tune a sequence classifier: python / accelerate launch / torchrun scripts/train_classifier.py
[--config FILE] --train_file train.csv --validation_file dev.csv --output_dir runs/x [flags]."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout without install

from gan_accel.classifier import CLASSIFIER_CONFIG_TYPES  # noqa: E402
from gan_accel.config import RunArguments, config_to_dict, parse_config  # noqa: E402
from gan_accel.errors import cli_entry  # noqa: E402
from gan_accel.loop.accel import print_and_save_config  # noqa: E402


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    data, model, train, run = parse_config((*CLASSIFIER_CONFIG_TYPES, RunArguments), argv, description=__doc__)
    if run.dry_run:
        print_and_save_config(None, config_to_dict(data, model, train, run), None)
        return 0
    from gan_accel.classifier.train import train_classifier

    out = train_classifier(data, model, train, run)
    if int(os.environ.get("RANK", "0")) == 0:  # once, not once per process under torchrun
        print(f"Run folder: {out}  (model: {out / 'model'}, results: {out / 'eval_results.json'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
