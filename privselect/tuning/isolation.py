"""Process isolation: a run of trainer code you do not trust, in a process of its own that it cannot outlive.

[`in_fresh_process`][privselect.tuning.isolation.in_fresh_process] forks the calling process for one run
(``PrivateTuner(..., isolate=True)``, any backend). The trainer may be hostile; the threat model is in
docs/release.md ("Isolation"). What holds:

* **The result is data.** The child writes one message ([`privselect.tuning.wire`][privselect.tuning.wire]: a
  float score, a JSON header and raw array buffers) into its result channel, an anonymous memory file
  (``memfd_create``; an unlinked temporary file where there is none). The caller reads it only after every
  process of the run is gone, declines one past [`MAX_MESSAGE_BYTES`][privselect.tuning.isolation.MAX_MESSAGE_BYTES]
  without reading it, and parses it without running code; the run's index is the caller's.
* **One descriptor.** In the child, 0, 1 and 2 point at ``/dev/null`` and every other inherited descriptor is
  closed (other runs' channels, the caller's sockets, a wakeup fd): the child holds only its own channel.
* **No descendants.** The child starts its own session (``setsid``); the caller is a child subreaper
  (``PR_SET_CHILD_SUBREAPER``) while a run is in flight, so a run's orphans, a double-forked daemon included,
  are re-parented to it. When the child exits (or is killed), the caller kills the child's process group and
  every process it adopted that started after the child outside its own session, reaps them, and repeats until
  none is left; only then is the message read and ``in_fresh_process`` returns.
* **Signals.** While it waits, the waiting thread blocks SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and
  SIGALRM (and SIGCHLD) and takes them with ``sigtimedwait``, which gives the sender's pid. A signal from a
  process of a run (its pid, its process group or session, or a process it started that the caller adopted)
  fails that run; any other (a terminal's Ctrl-C, the operator's ``kill``) is re-raised after the run's
  processes are gone, so the operator's Ctrl-C still stops the selection (``KeyboardInterrupt``).
* **The caller is harder to reach**: ``PR_SET_DUMPABLE`` is 0 while a run is in flight (no ptrace, no
  ``/proc/<caller>/fd`` or ``mem`` for same-user processes), restored afterwards.

Limits (docs/release.md): Linux-only pieces (subreaper, dumpable, memfd) are skipped elsewhere. A signal whose
sender has exited and been reaped before the caller reads it cannot be traced to a run and counts as the
operator's. With the ``threading`` backend the driver's main thread does not block these signals, so the kernel
may hand a run's signal to the main thread's handler first. A process that another thread of the caller starts
in a new session during an isolated selection is treated like an adopted run process.

The cost is one ``fork`` of the calling process per run (it grows with the process's memory) plus encoding and
parsing the value (``benchmarks/release.py``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["in_fresh_process", "isolation_supported", "MAX_MESSAGE_BYTES", "RUN_SIGNALS"]

MAX_MESSAGE_BYTES = 1 << 30
"""A run's message past this many bytes is declined unread: the run scores worst."""
RUN_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                         signal.SIGUSR2, signal.SIGALRM})
"""Catchable signals that a run's process sends to the caller: that run's failure, never the operator's action."""
_WAITED = RUN_SIGNALS | {signal.SIGCHLD}
_TICK = 0.25  # seconds between checks of the child when no signal arrives (a safety net: SIGCHLD wakes the wait)
_PR_GET_DUMPABLE, _PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 3, 4, 36, 37


def isolation_supported() -> bool:
    return hasattr(os, "fork")


# -- the caller's process-wide settings while runs are in flight ---------------------------------------------------


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_int
    return function


_PRCTL = _prctl()
_LOCK = threading.Lock()
_IN_FLIGHT = 0
_SAVED: tuple[int, int] = (0, 1)


@dataclass
class _Run:
    """A run in flight: its process (the session and group leader), its start time, and the waiting thread."""

    pid: int
    start: int
    thread: int
    failed: bool = False
    reaped: bool = False  # once reaped, its pid may be reused: never signalled again


_RUNS: dict[int, _Run] = {}


@contextlib.contextmanager
def _caller_guarded() -> Iterator[None]:
    """Subreaper on and dumpable off while any run of this process is in flight (counted across threads)."""
    global _IN_FLIGHT, _SAVED
    with _LOCK:
        if _IN_FLIGHT == 0 and _PRCTL is not None:
            was_reaper = ctypes.c_int(0)
            _PRCTL(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was_reaper), 0, 0, 0)
            _SAVED = (was_reaper.value, _PRCTL(_PR_GET_DUMPABLE, 0, 0, 0, 0))
            _PRCTL(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
            _PRCTL(_PR_SET_DUMPABLE, 0, 0, 0, 0)
        _IN_FLIGHT += 1
    try:
        yield
    finally:
        with _LOCK:
            _IN_FLIGHT -= 1
            if _IN_FLIGHT == 0 and _PRCTL is not None:
                _PRCTL(_PR_SET_DUMPABLE, max(_SAVED[1], 0), 0, 0, 0)
                _PRCTL(_PR_SET_CHILD_SUBREAPER, _SAVED[0], 0, 0, 0)


# -- the child ------------------------------------------------------------------------------------------------------


def _channel() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("privselect-run", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as file:  # unlinked at once; the descriptor outlives the file object
        return os.dup(file.fileno())


def _keep_only(channel: int) -> int:
    """/dev/null on 0, 1, 2; every other descriptor closed but ``channel`` (moved to 3 or above); returns it."""
    if channel < 3:
        channel = fcntl.fcntl(channel, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != null:
            os.dup2(null, fd)
    os.closerange(3, channel)
    os.closerange(channel + 1, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1 << 16)
    return channel


def _child(function: Callable[..., bytes], args: tuple, channel: int, mask: set) -> None:
    """In the forked child: its own session, one descriptor, run, write the message, leave without any cleanup."""
    try:
        os.setsid()
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        channel = _keep_only(channel)
        message = memoryview(function(*args))
        while message:
            message = message[os.write(channel, message):]
    finally:
        os._exit(0)


# -- the caller: wait, attribute signals, end every process of the run ----------------------------------------------


def _stat(pid: int) -> tuple[int, int, int, int] | None:
    """(parent, process group, session, start time) of ``pid`` from /proc, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])


def _run_of(sender: int) -> _Run | None:
    """The run in flight that ``sender`` belongs to: a run's process, its group or session, or a process it
    started (followed up its parents; an orphan the caller adopted counts when it started after a run's process
    and left the caller's session). None for anything else, and for a sender that is gone."""
    me, my_session, current = os.getpid(), os.getsid(0), sender
    for _ in range(256):
        if current in _RUNS:
            return _RUNS[current]
        stat = _stat(current)
        if stat is None:
            return None
        parent, group, session, start = stat
        owner = _RUNS.get(group) or _RUNS.get(session)
        if owner is not None:
            return owner
        if parent == me:
            adopted = [run for run in _RUNS.values() if run.start <= start] if session != my_session else []
            return min(adopted, key=lambda run: start - run.start, default=None)
        if parent <= 1:
            return None
        current = parent
    return None


def _children() -> list[int]:
    me = os.getpid()
    try:
        tasks = os.listdir(f"/proc/{me}/task")
    except OSError:
        return []
    found: set[int] = set()
    for task in tasks:
        try:
            with open(f"/proc/{me}/task/{task}/children", "rb") as file:
                found.update(int(pid) for pid in file.read().split())
        except FileNotFoundError:  # no CONFIG_PROC_CHILDREN: scan the process table
            return [int(pid) for pid in os.listdir("/proc") if pid.isdigit() and (_stat(int(pid)) or (0,))[0] == me]
        except OSError:
            continue
    return sorted(found)


def _reap(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, ChildProcessError, PermissionError):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def _end_every_process(run: _Run) -> None:
    """SIGKILL the run's process group and every process of the run the caller adopted, until none is left."""
    if not run.reaped:
        _reap(run.pid)
        run.reaped = True
    my_session = os.getsid(0)
    for _ in range(100_000):
        group_left = True
        try:
            os.killpg(run.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            group_left = False
        with _LOCK:  # a run another thread forks is registered under the same lock: it is never taken for an orphan
            adopted = [child for child in _children() if child not in _RUNS
                       and (stat := _stat(child)) is not None and stat[3] >= run.start and stat[2] != my_session]
        for child in adopted:
            _reap(child)
        if not group_left and not adopted:
            return
        if not adopted:
            os.sched_yield()


def _wait(run: _Run) -> int | None:
    """Wait for the run's process; None when it exited cleanly, else the operator's signal to re-raise (or 0)."""
    while True:
        done, status = os.waitpid(run.pid, os.WNOHANG)
        if done:
            run.reaped = True
            return None if os.waitstatus_to_exitcode(status) == 0 else 0
        info = signal.sigtimedwait(_WAITED, _TICK)
        if info is None or info.si_signo not in _WAITED:  # none, or a record the kernel did not fill (seen under load)
            continue
        if info.si_signo == signal.SIGCHLD:
            with _LOCK:  # a run leaves _RUNS under this lock before its thread can end: the thread is alive here
                other = _RUNS.get(info.si_pid)
                if other is not None and other is not run:
                    with contextlib.suppress(OSError):  # a lost wake-up costs one _TICK, never a run
                        signal.pthread_kill(other.thread, signal.SIGCHLD)  # its waiter's wake-up, taken here
            continue
        owner = _run_of(info.si_pid) if info.si_pid else None
        if owner is None:
            return info.si_signo  # the operator's: re-raised once the run's processes are gone
        owner.failed = True
        if owner is run:
            return 0


def in_fresh_process(function: Callable[..., bytes], args: tuple) -> bytes | None:
    """The message ``function(*args)`` computed in a forked child, or None when the run failed.

    A run fails when its process exits other than cleanly, is killed, sends a message past
    [`MAX_MESSAGE_BYTES`][privselect.tuning.isolation.MAX_MESSAGE_BYTES], or one of its processes sends the caller
    a signal of [`RUN_SIGNALS`][privselect.tuning.isolation.RUN_SIGNALS]. Returns when every process of the run is
    gone. The operator's signal is re-raised here (``KeyboardInterrupt`` for a Ctrl-C in the main thread).
    """
    operator_signal: int | None = None
    with _caller_guarded():
        channel = _channel()
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED)
        run: _Run | None = None
        try:
            with _LOCK:  # forked and registered at once: another thread's scan for adopted orphans never sees it unnamed
                pid = os.fork()
                if pid == 0:  # pragma: no cover - the child (coverage does not follow it)
                    _child(function, args, channel, mask)
                stat = _stat(pid)
                run = _RUNS[pid] = _Run(pid, stat[3] if stat is not None else 0, threading.get_ident())
            operator_signal = _wait(run)
            _end_every_process(run)
            return None if operator_signal is not None or run.failed else _read(channel)
        finally:
            if run is not None:
                if not run.reaped:  # left by an exception (the operator's): end the run's processes first
                    _end_every_process(run)
                with _LOCK:
                    _RUNS.pop(run.pid, None)
            os.close(channel)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            if operator_signal:
                signal.raise_signal(operator_signal)


def _read(channel: int) -> bytes | None:
    size = os.fstat(channel).st_size
    if not 0 < size <= MAX_MESSAGE_BYTES:
        return None
    chunks, offset = [], 0
    while offset < size:
        chunk = os.pread(channel, min(size - offset, 1 << 28), offset)
        if not chunk:
            return None
        chunks.append(chunk)
        offset += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
