"""The contenders the speed benchmarks time against each other: the toolkit's GAN, InfoGAN and
classifier loops beside a plain PyTorch loop, a hand-written Accelerate loop and
transformers.Trainer, and the sampling path. Shared by benchmarks.speed and the tests."""
