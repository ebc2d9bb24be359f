"""The profiler: the same report as Tandem's C++ profiler (and PaddlePaddle's
layout), a Chrome trace, and the collected data as Python values.

    with tandem.profiler.profiler("All", "total") as prof:
        for _ in range(11):                 # the first run is warm-up, left out
            exe.run(main, fetch_list=[out])
    # the report is printed here; prof.profile holds the data
    prof.profile.copy_ledger()              # one dict per placed copy
    print(prof.profile.advice())            # device_guard changes that remove copies

The executor attaches the plan it runs, so the report's placement table,
copy ledger and the advisor refer to the last program run while profiling.
States: "CPU" (host spans), "GPU" or "All" (host spans and device time).
Sort keys: "default", "calls", "total", "max", "min", "ave".
"""

import contextlib
import sys

from tandem import _C

__all__ = ["profiler", "start_profiler", "stop_profiler", "reset_profiler", "record_event",
           "is_profiler_enabled", "Profile"]

_P = _C.profiler


class Profile:
    """A finished session's data."""

    def __init__(self, handle):
        self._h = handle

    @property
    def report(self):
        """The report, as printed (sorted by the key stop was given)."""
        return self._h.report

    def format_report(self, sorted_key="default"):
        return self._h.format_report(sorted_key or "default")

    @property
    def steady_runs(self):
        return self._h.steady_runs

    @property
    def warmup_runs(self):
        return self._h.warmup_runs

    def steady_step_ms(self):
        """Wall time of each steady-state run, in ms."""
        return self._h.steady_step_ms()

    def copy_ledger(self):
        """One dict per placed copy: op_index, var, from_place, to_place, bytes, sync,
        consumer, consumer_index, calls, per_step, total_ms, device_ms."""
        return self._h.copy_ledger()

    def concurrency(self):
        """Median per steady step: step_ms, host_busy_ms, host_wait_ms, overlap_ms and,
        per device, busy_ms, overlap_ms, idle_for_host_ms."""
        return self._h.concurrency()

    def event_totals(self):
        """{event name: {"calls", "host_ms"}} over the steady runs."""
        return self._h.event_totals()

    def advice(self):
        """The copy advisor's verdict on the attached plan ("" without one)."""
        return self._h.advice()

    def write_chrome_trace(self, path):
        self._h.write_chrome_trace(path)

    def __str__(self):
        return self.report


def is_profiler_enabled():
    return _P.is_enabled()


def start_profiler(state="All", warmup_runs=1):
    """Starts a session (FailedPreconditionError if one is running)."""
    _P.start(state, int(warmup_runs))


def stop_profiler(sorted_key=None, profile_path=None, file=None):
    """Stops the session, prints its report to ``file`` (sys.stdout), writes a Chrome
    trace to ``profile_path`` if given, and returns the Profile."""
    profile = Profile(_P.stop(sorted_key or "default", profile_path or ""))
    out = file or sys.stdout
    out.write(profile.report)
    out.flush()
    return profile


def reset_profiler():
    """Discards what the running session collected so far."""
    _P.reset()


def record_event(name):
    """A user span: ``with tandem.profiler.record_event("train_step"): ...``."""
    return _P.RecordEvent(name)


_TRACER_OPTIONS = ("Default", "OpDetail", "AllOpDetail")


class _Session:
    profile = None


@contextlib.contextmanager
def profiler(state="All", sorted_key=None, profile_path=None, tracer_option="Default",
             warmup_runs=1, file=None):
    """Profiles the runs inside; at the end prints the report and keeps the data in
    ``.profile``. When the block raises, the session stops without a report.
    The first four parameters are Paddle 1.8's; ``tracer_option`` ("Default",
    "OpDetail", "AllOpDetail") is checked and does not change Tandem's report."""
    _P.check_sort_key(sorted_key or "default")  # before anything starts
    if tracer_option not in _TRACER_OPTIONS:
        raise ValueError("profiler: tracer_option must be one of %s, got %r" %
                         (", ".join(_TRACER_OPTIONS), tracer_option))
    start_profiler(state, warmup_runs)
    session = _Session()
    try:
        yield session
    except BaseException:
        _P.stop("default", "")
        raise
    session.profile = stop_profiler(sorted_key, profile_path, file)
