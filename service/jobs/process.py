"""The training process: where a job's task runs under process isolation (service.jobs.manager).

The child runs the task, reports progress, "saving" and the outcome through a pipe, and
stops after the current tree when its ``stop`` event is set. Its memory is bounded: the
address space it may add after starting is capped at the job's budget (RLIMIT_AS, plus
ADDRESS_SLACK for thread stacks and allocator arenas that are reserved but never touched),
so an allocation beyond it raises MemoryError inside the job, which fails with a reason
that names the budget, instead of the machine's OOM killer choosing a process to kill.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import select
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from service.errors import ServiceError
from service.jobs.task import TrainTask

ADDRESS_SLACK = 512 * 1024 * 1024
"""Address space a training process may reserve beyond its memory budget (bytes)."""


class JobOutOfMemory(ServiceError):
    """The training process tried to allocate past its memory budget and was stopped."""

    status = 422
    code = "job_memory_exceeded"


class TrainingProcessDied(ServiceError):
    """The training process ended without a word: killed from outside, or crashed."""

    status = 500
    code = "training_failed"


def died(exitcode: int | None) -> TrainingProcessDied:
    """Why a job whose training process ended without reporting failed, by its exit code."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "a signal"
        return TrainingProcessDied(
            f"the training process was killed by {name} ({-exitcode}) from outside the "
            "service (the system's out-of-memory killer sends SIGKILL); nothing of the model "
            "was kept: train it again, with fewer rows or trees if memory is short"
        )
    return TrainingProcessDied(
        f"the training process exited unexpectedly (exit code {exitcode}); nothing of the "
        "model was kept: train it again"
    )


def process_context(preload: Sequence[str] = ()) -> Any:
    """forkserver where available: children fork from a clean, single-threaded server that
    has already imported the ``preload`` modules (the app gives service.training.warmup:
    okcore with its numba kernels warm, and what tasks are unpickled from), so a job starts
    in milliseconds and no lock of the service's threads is inherited.

    A child re-runs the main module's top level (multiprocessing's rule): the app also
    preloads ``service.cli`` so that this costs nothing under ``okboost serve``; a script
    that builds the app itself needs the usual ``if __name__ == "__main__":`` guard."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(preload))
        return ctx
    return multiprocessing.get_context("spawn")


def _address_space() -> int | None:
    """This process's virtual memory size in bytes (Linux), None elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def limit_memory(budget: int) -> None:
    """Cap the address space this process may still add at ``budget`` + ADDRESS_SLACK."""
    current = _address_space()
    if current is None:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = current + budget + ADDRESS_SLACK
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _out_of_memory(budget: int) -> JobOutOfMemory:
    return JobOutOfMemory(
        f"the training process needed more than its memory budget of {budget / 1e9:.3g} GB "
        "(OKBOOST_MAX_JOB_MEMORY) and was stopped: train on fewer rows or trees, ask for a "
        "low-rank factor (params.factor_rank), or have the budget raised"
    )


def die_with_service(conn: Any) -> None:
    """Have this training process killed as soon as the service that reads ``conn`` (the
    sending end of its report pipe, whose reading end only the service holds) is gone. A
    service killed (kill -9, a crash) then takes its training processes with it, even one
    in a phase that reports nothing for minutes or busy saving, so none goes on unwatched
    and saves a model after the restarted service ended its job.

    The watch is a small forked process, not a thread: the factorisation of the output
    kernel holds the GIL for its whole length. Called first thing, while this process is
    still single-threaded (a fork from the fork server). Where poll() is missing, nothing
    is done (the process still ends at its next report, which finds the pipe broken)."""
    if not hasattr(select, "poll"):
        return
    trainer = os.getpid()
    if os.fork() != 0:
        return
    try:
        poller = select.poll()
        poller.register(conn.fileno(), 0)  # POLLERR (its reader closed) is always reported
        while not any(e & (select.POLLERR | select.POLLHUP) for _, e in poller.poll()):
            pass
        if os.getppid() == trainer:  # still running (else ended, and its pid may be reused)
            os.kill(trainer, signal.SIGKILL)
    finally:
        os._exit(0)


def child_main(task: TrainTask, conn: Any, stop: Any, memory_budget: int | None) -> None:
    """Entry point of a training process: run ``task``, report through ``conn``."""
    die_with_service(conn)

    class _Reporter:
        def __call__(self, p: Any) -> bool:
            conn.send(
                (
                    "progress",
                    {
                        "done": int(p.done),
                        "total": int(p.total),
                        "elapsed": float(p.elapsed),
                        "train_loss": None if p.train_loss is None else float(p.train_loss),
                        "val_loss": None if p.val_loss is None else float(p.val_loss),
                        "phase": str(getattr(p, "phase", None) or "trees"),
                        "phase_eta": (
                            None if getattr(p, "phase_eta", None) is None else float(p.phase_eta)
                        ),
                        "unit": str(getattr(p, "unit", None) or "tree"),
                    },
                )
            )
            return bool(stop.is_set())

        def saving(self) -> None:
            conn.send(("saving",))

    try:
        if memory_budget is not None:
            limit_memory(memory_budget)
        conn.send(("done", task(_Reporter())))
    except MemoryError:
        conn.send(("error", _out_of_memory(memory_budget or 0)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which decides
        try:
            conn.send(("error", exc))
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
    finally:
        conn.close()
        # Skip interpreter finalisation (numba / llvmlite tear-down takes ~0.3 s): the
        # model files are already written and fsynced, and the parent waits on join().
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
