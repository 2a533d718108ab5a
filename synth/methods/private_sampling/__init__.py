"""Private sampling on the Boolean cube: the density fit (``algorithm``) and the feasibility
bounds that say when its theorems hold (``bounds``)."""

from synth.methods.private_sampling.method import PrivateSampling

__all__ = ["PrivateSampling"]
