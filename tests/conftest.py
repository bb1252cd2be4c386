"""Session-wide: the decode cache (gan_accel.data.cache) of every test run goes to a temporary
folder (removed at exit), never to the user's ~/.cache."""

import atexit
import os
import shutil
import tempfile

os.environ["GAN_ACCEL_CACHE"] = tempfile.mkdtemp(prefix="gan_accel_test_cache_")
atexit.register(shutil.rmtree, os.environ["GAN_ACCEL_CACHE"], True)
