"""The two-network GAN path: config, losses, EMA, the D/G step phases and the training loop."""
