"""Session-wide: the decode cache (gan_accel.data.cache) of every test run goes to a temporary
folder (removed at exit), never to the user's ~/.cache. Each process has its own, so the workers
of a parallel run (pytest-xdist, ``make test``) never write into one another's cache.

Under pytest-xdist every worker runs on one thread (its own runs and the subprocesses it starts,
unless a test sets the count itself): ``make test`` runs one worker per core, and two workers of
two threads each on 2 cores stall one another (the tiny models' ops are far too small to split).
"""

import atexit
import os
import shutil
import sys
import tempfile

os.environ["GAN_ACCEL_CACHE"] = tempfile.mkdtemp(prefix="gan_accel_test_cache_")
atexit.register(shutil.rmtree, os.environ["GAN_ACCEL_CACHE"], True)

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Before torch is imported: it reads the variables once, at import.
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
    if "torch" in sys.modules:  # a plugin imported it first
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

# Files that take a large share of the default run, handed out first under pytest-xdist
# (--dist loadfile keeps a file on one worker): tests/test_readme.py runs every guide's runnable
# block as a fresh process, about a quarter of the run's test time; started last, its worker would
# still be running alone long after the other finished.
LONGEST_FIRST = ("test_readme.py",)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)  # stable: the rest keep their order
