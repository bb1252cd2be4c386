"""gan_accel: custom training loops on Hugging Face Accelerate (two-network GANs, classifiers)."""

__version__ = "0.1.0"
