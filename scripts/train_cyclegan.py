"""Train a CycleGAN (unpaired image-to-image translation):
python / accelerate launch / torchrun scripts/train_cyclegan.py [--config FILE] [flags]."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout without install

from gan_accel.config import RunArguments, config_to_dict, parse_config  # noqa: E402
from gan_accel.cyclegan.config import CYCLEGAN_CONFIG_TYPES  # noqa: E402
from gan_accel.errors import cli_entry  # noqa: E402
from gan_accel.loop.accel import print_and_save_config  # noqa: E402


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    data, model, train, evaluation, run = parse_config((*CYCLEGAN_CONFIG_TYPES, RunArguments), argv, description=__doc__)
    model.check_image_size(data.image_size)
    if run.dry_run:
        print_and_save_config(None, config_to_dict(data, model, train, evaluation, run), None)
        return 0
    from gan_accel.cyclegan.trainer import train_cyclegan

    out = train_cyclegan(data, model, train, run, evaluation)
    print(f"Run folder: {out}  (samples: {out / 'samples'}, generators: {out / 'generator_A2B'}, {out / 'generator_B2A'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
