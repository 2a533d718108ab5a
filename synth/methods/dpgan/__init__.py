"""DP-GAN: a latent-class generator against a critic trained with DP-SGD (Opacus).

:mod:`.method` holds the method; :mod:`.networks` and :mod:`.training` import torch and are
imported only when a GAN is fitted.
"""

from synth.methods.dpgan.method import DPGAN, GAN

__all__ = ["DPGAN", "GAN"]
