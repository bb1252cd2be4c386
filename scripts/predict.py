"""Classify texts with a trained model folder: label and score per text.

    python scripts/predict.py --model runs/x/model --text "a great film" "dull and awful"
    python scripts/predict.py --model runs/x/model --input_file texts.txt --output_file preds.csv
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout without install

from gan_accel.config import parse_config  # noqa: E402
from gan_accel.errors import cli_entry  # noqa: E402


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    from gan_accel.classifier.predict import PredictArguments, predict, write_predictions
    from gan_accel.data.paths import check_output_outside_input

    (args,) = parse_config((PredictArguments,), argv, description=__doc__)
    check_output_outside_input("--input_file", args.input_file, "--output_file", args.output_file)
    rows = predict(args)
    write_predictions(rows, args.output_file)
    if args.output_file:
        print(f"Wrote {len(rows)} predictions to {args.output_file}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
