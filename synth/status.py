"""How a run stands, in one vocabulary from the privacy account and the run store to the page:
running, then finished, cancelled or failed. A run whose process died mid-run is ``died``,
derived when the store is read (nothing settled it)."""

from __future__ import annotations

from synth.errors import Cancelled

RUNNING, FINISHED, CANCELLED, FAILED = "running", "finished", "cancelled", "failed"
DIED = "died"  # derived when read, never stored: a RUNNING record whose process is gone


def ended(exc: BaseException) -> str:
    """How a run that raised ``exc`` ended: a cancel (or Ctrl-C) or a failure."""
    return CANCELLED if isinstance(exc, Cancelled | KeyboardInterrupt) else FAILED
