"""Classify texts with a trained model folder: label and score per text.

gan-accel predict --model runs/x/model --text "a great film" "dull and awful"
gan-accel predict --model runs/x/model --input_file texts.txt --output_file preds.csv
"""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from gan_accel.config.parse import parse_config
from gan_accel.errors import cli_entry


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    from gan_accel.classifier.predict import PredictArguments, predict, write_predictions
    from gan_accel.data.paths import check_folders

    (args,) = parse_config((PredictArguments,), argv, description=__doc__)
    check_folders({"--input_file": args.input_file, "--model": args.model}, {"--output_file": args.output_file})
    rows = predict(args)
    write_predictions(rows, args.output_file)
    if args.output_file:
        print(f"Wrote {len(rows)} predictions to {args.output_file}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
