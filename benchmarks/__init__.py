"""Benchmarks: scripts run by hand, writing JSON under results/. A package so that the tests
can import served.py: opacus installs a top-level ``benchmarks`` package of its own, which
would otherwise shadow this folder."""
