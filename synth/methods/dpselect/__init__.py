"""DP-Select: a DP-GAN pool, then private selection of the output rows from it; one module
per selection engine (``measure``, with ``weights``; ``rows``; ``ga``)."""

from synth.methods.dpselect.method import DPSelect

__all__ = ["DPSelect"]
