"""Private-GSD: select, measure and project rounds over query workloads (``queries``), the
projection a genetic search over a synthetic table (``projection``)."""

from synth.methods.gsd.method import GSD

__all__ = ["GSD"]
