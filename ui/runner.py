"""A run in a background thread, so the page stays live while a method trains.

The thread never touches Streamlit: it only calls the ``synth`` package and appends the fit's
events to its :class:`Job`, which the page reads on its own schedule (a fragment that reruns
a few times a second). Cancelling sets a flag that the fit checks at every step.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from synth.errors import Cancelled, SynthError
from synth.methods import Event, FitContext, Progress, Spent, StageStarted
from synth.status import CANCELLED, FAILED, FINISHED, RUNNING

log = logging.getLogger(__name__)



@dataclass
class Stage:
    """A stage of a run as its events tell it so far."""

    step: int
    total: int | None
    description: str
    measured: bool = False  # whether a progress event carried metrics (losses, distances)
    began: float = 0.0  # when its first event came (perf_counter)


@dataclass
class Job:
    """One run: its events so far, its outcome once the thread ends."""

    name: str
    seed: int | None  # post-processing only
    epsilon: float  # the run's whole budget, for the live view
    events: list[Event] = field(default_factory=list)  # appended by the thread only
    status: str = RUNNING
    result: Any = None  # what the work returned, once FINISHED
    error: str = ""  # a readable message, once FAILED
    spent: dict[str, Any] | None = None  # the ledger of what ran, once CANCELLED or FAILED
    started: float = field(default_factory=time.perf_counter)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _began: dict[str, float] = field(default_factory=dict, repr=False)  # stage → its start
    _thread: threading.Thread | None = field(default=None, repr=False)

    def start(self, work: Callable[[FitContext], Any],
              ledger: Callable[[], dict[str, Any] | None] = lambda: None) -> Job:
        """Run ``work(ctx)`` in a daemon thread; ``ctx`` feeds this job's events and flag.
        ``ledger()`` gives the run's ledger so far, kept if the run stops before the end."""
        ctx = FitContext(postprocessing_seed=self.seed, on_event=self._heard,
                         should_stop=self._stop.is_set, min_interval=0.1)
        self._thread = threading.Thread(target=self._run, args=(work, ctx, ledger),
                                        daemon=True, name=f"synth run {self.name}")
        self._thread.start()
        return self

    def _heard(self, event: Event) -> None:
        if isinstance(event, StageStarted):
            self._began[event.stage] = time.perf_counter()
        self.events.append(event)

    def _run(self, work: Callable[[FitContext], Any], ctx: FitContext,
             ledger: Callable[[], dict[str, Any] | None]) -> None:
        try:
            self.result = work(ctx)
            self.status = FINISHED
            return
        except Cancelled:
            status = CANCELLED
        except SynthError as exc:
            self.error, status = str(exc), FAILED
        except Exception as exc:  # a bug: log it for us, tell the user plainly
            log.exception("run %s failed", self.name)
            self.error = f"unexpected {type(exc).__name__}: {exc}. Please report this."
            status = FAILED
        self.spent = ledger()  # what its mechanisms spent before it stopped
        self.status = status  # last: the page reads the ledger once the status says so

    def overview(self) -> tuple[dict[str, Stage], float]:
        """The stages so far, in order, and the ε charged to the ledger (every mechanism is
        charged before it runs, so this leads what has run)."""
        stages: dict[str, Stage] = {}
        charged = 0.0
        for e in list(self.events):  # a copy: the thread appends meanwhile
            if isinstance(e, StageStarted):
                stages[e.stage] = Stage(0, e.total, e.description,
                                        began=self._began.get(e.stage, self.started))
            elif isinstance(e, Progress) and e.stage in stages:
                stage = stages[e.stage]
                stage.step, stage.total = e.step, e.total or stage.total
                stage.measured = stage.measured or bool(e.metrics)
            elif isinstance(e, Spent):
                charged = e.total_epsilon
        return stages, charged

    def cancel(self) -> None:
        self._stop.set()

    @property
    def cancelling(self) -> bool:
        return self._stop.is_set() and self.status == RUNNING

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started


@dataclass
class SweepJob(Job):
    """A background sweep: the rows finished so far (appended by its thread), of ``total``."""

    rows: list[dict] = field(default_factory=list)
    total: int = 0
    grid: str = ""  # what it runs, as the page keys its sweeps
