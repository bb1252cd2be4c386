"""gan_accel: custom training loops on Hugging Face Accelerate (GANs, CycleGAN, text classifiers, distillation)."""

__version__ = "0.1.0"
