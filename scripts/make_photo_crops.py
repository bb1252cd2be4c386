"""Build a folder of real-photo crops: python scripts/make_photo_crops.py --output_dir photos [flags]."""

# Kept for checkouts and job scripts: the command is gan_accel.cli.make_photo_crops, on the PATH
# as `gan-accel make-photo-crops` once the package is installed.
from gan_accel.cli.make_photo_crops import __doc__, main  # noqa: F401 (the docstring is the --help text)

if __name__ == "__main__":
    raise SystemExit(main())
