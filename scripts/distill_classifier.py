"""Distil a fine-tuned sequence classifier (the teacher) into a smaller one (the student):
python / accelerate launch / torchrun scripts/distill_classifier.py [--config FILE]
--train_file train.csv --validation_file dev.csv --teacher_model_name_or_path runs/teacher/model
--student_from_teacher [--student_layers N] --output_dir runs/student [flags]."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout without install

from gan_accel.classifier.distill import DISTILL_CONFIG_TYPES  # noqa: E402
from gan_accel.config import RunArguments, config_to_dict, parse_config  # noqa: E402
from gan_accel.errors import cli_entry  # noqa: E402
from gan_accel.loop.accel import print_and_save_config  # noqa: E402


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    *configs, run = parse_config((*DISTILL_CONFIG_TYPES, RunArguments), argv, description=__doc__)
    if run.dry_run:
        print_and_save_config(None, config_to_dict(*configs, run), None)
        return 0
    from gan_accel.classifier.distill.train import train_distill

    out = train_distill(*configs, run).output_dir
    if int(os.environ.get("RANK", "0")) == 0:  # once, not once per process under torchrun
        print(f"Run folder: {out}  (student: {out / 'model'}, results: {out / 'eval_results.json'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
