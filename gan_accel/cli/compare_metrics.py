"""Say whether two GAN metric results are comparable, and if not, why.

    gan-accel compare-metrics runs/a/generator/eval_results.json runs/b/generator/eval_results.json

Each file is an eval_results.json of gan-accel evaluate-gan (or a protocol file,
CACHE_DIR/protocol/<id>.json, named by eval/protocol_id in a training run's metrics.jsonl).
Comparable results print their metrics side by side with their intervals; otherwise every field of
the protocol that differs is listed. Exit code 0: comparable, 1: not comparable, 2: bad input.
"""

from __future__ import annotations

import argparse
from typing import Optional, Sequence

from gan_accel.errors import cli_entry, parser_error
from gan_accel.metrics.protocol import compare_protocols, format_metrics, load_result, protocol_id


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first", metavar="A.json", help="An eval_results.json (or a protocol file).")
    parser.add_argument("second", metavar="B.json", help="Another one.")
    parser.add_argument("--debug", action="store_true", help="Show full tracebacks instead of one-line errors.")
    parser.error = parser_error
    args = parser.parse_args(argv)
    a = load_result(args.first)
    b = load_result(args.second)
    comparable, reasons, notes = compare_protocols(a["protocol"], b["protocol"])
    if comparable:
        print(f"comparable: same protocol {protocol_id(a['protocol'])}")
        for name, result in ((args.first, a), (args.second, b)):
            print(f"{name}:")
            print(format_metrics({**result, "protocol": None}, markdown=False))
    else:
        print(f"NOT comparable: {len(reasons)} protocol field(s) differ")
        for reason in reasons:
            print(f"  {reason}")
    for note in notes:
        print(f"  note (does not prevent comparison; compare within the intervals): {note}")
    return 0 if comparable else 1


if __name__ == "__main__":
    raise SystemExit(main())
