"""DP-GAN: a latent-class generator against a critic trained with DP-SGD (Opacus)."""

from synth.methods.dpgan.method import DPGAN, GAN, train_gan

__all__ = ["DPGAN", "GAN", "train_gan"]
