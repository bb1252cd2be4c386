"""Photo quality: generators judged on folders of real photographs (docs/photos.md):

    python -m benchmarks.photos equal_time --workdir W --minutes 15    # the default command against
                                       # today's defaults and pytorch/examples' dcgan at equal time
    python -m benchmarks.photos panel --workdir W --folder photos --setting 'today=' ...
                                       # settings side by side over seeds, judged by the panel
    python -m benchmarks.photos along --workdir W --folder photos --run_dir RUN
                                       # the panel at every kept checkpoint of one run
    python -m benchmarks.photos swd_ranks --workdir W --folder photos
                                       # does the run's own SWD rank the panel's generators as it does?
    python -m benchmarks.photos folder --name mahotas --output_dir mahotas   # a second folder

The panel's yardsticks are benchmarks/photos/panel*.py; its folders (the bundled photos and the
second ones) benchmarks/photos/folders.py.
"""

from typing import Optional, Sequence

from benchmarks.entry import dispatch

COMMANDS = {
    "equal_time": ("benchmarks.photos.equal_time", "runs at equal wall-clock time, scored by the region judge"),
    "panel": ("benchmarks.photos.side_by_side", "settings side by side over seeds, verdict by the panel"),
    "along": ("benchmarks.photos.along", "the panel along one run's checkpoints"),
    "swd_ranks": ("benchmarks.photos.swd_ranks", "the run's own SWD against the panel, generator by generator"),
    "folder": ("benchmarks.photos.folders", "write a second folder of real crops (train/ and heldout/)"),
}


def main(argv: Optional[Sequence[str]] = None) -> int:
    return dispatch("photos", __doc__, COMMANDS, argv)
