"""Chunked loops on a fit's thread pool: one runner shared by the tree growth and the
boosting step, so that ``n_jobs`` threads serve every parallel kernel of a fit.

A kernel run this way writes disjoint outputs, each computed in the same order for any
chunking (reductions are made per output element, or written per row and summed in row
order afterwards), so a model does not depend on the number of threads.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TypeVar

T = TypeVar("T")

#: Loops involving fewer additions than this stay on one thread: 0.1-0.3 ms of work (the
#: statistics read rows scattered over R twice), against tens of microseconds to hand a
#: chunk to another thread and wait for it. At 1,000,000 the statistics of every child
#: under 20,000 rows (r = 50) stayed on one thread: 10% of a 2-thread fit's CPU at
#: N = 64,000, 2% at 250,000.
PARALLEL_ROWS_MIN_WORK = 250_000


def in_chunks(
    executor: Executor | None,
    n_threads: int,
    work: int,
    total: int,
    run: Callable[[int, int], None],
    grain: int = 1,
) -> None:
    """run(lo, hi) over contiguous chunks covering range(total), one per thread when
    ``work`` (the additions involved) is worth it; chunk bounds are multiples of ``grain``.
    The calling thread runs the first chunk while the executor runs the others (no idle
    wake-up round trip)."""
    n_chunks = 1 if executor is None or work < PARALLEL_ROWS_MIN_WORK else n_threads
    n_chunks = max(1, min(n_chunks, total // grain))
    if n_chunks == 1:
        run(0, total)
        return
    bounds = [total * c // n_chunks // grain * grain for c in range(n_chunks)] + [total]
    assert executor is not None
    others = [executor.submit(run, bounds[c], bounds[c + 1]) for c in range(1, n_chunks)]
    run(bounds[0], bounds[1])
    for future in others:
        future.result()


def overlapped(
    executor: Executor | None,
    n_threads: int,
    work: int,
    first: Callable[[], T],
    total: int,
    run: Callable[[int, int], None],
    n_blocks: int,
) -> T:
    """first() on the calling thread while the executor's threads run run(lo, hi) over
    ``n_blocks`` contiguous blocks of range(total), taken in turn as each thread is free;
    the calling thread takes blocks too once first() is done. Returns first()'s result.

    Two independent kernels share the threads this way (a node's row statistics and its
    histogram): neither is split beyond its blocks, and a thread slowed by another process
    takes fewer blocks. ``run`` must write disjoint outputs per block, so which thread runs
    a block does not matter. A block holds at least PARALLEL_ROWS_MIN_WORK of ``work``; with
    one thread or fewer than two blocks: first(), then run(0, total)."""
    n_blocks = max(1, min(n_blocks, total, work // max(1, PARALLEL_ROWS_MIN_WORK)))
    if executor is None or n_threads < 2 or n_blocks < 2:
        result = first()
        run(0, total)
        return result
    bounds = [total * b // n_blocks for b in range(n_blocks + 1)]
    blocks = itertools.count()  # next() is atomic: each block is taken once

    def take_blocks() -> None:
        while (b := next(blocks)) < n_blocks:
            run(bounds[b], bounds[b + 1])

    others = [executor.submit(take_blocks) for _ in range(n_threads - 1)]
    result = first()
    take_blocks()
    for future in others:
        future.result()
    return result


class ChunkRunner:
    """:func:`in_chunks` on one executor's ``n_threads`` threads (None: the calling thread
    only)."""

    def __init__(self, executor: Executor | None = None, n_threads: int = 1) -> None:
        self.executor, self.n_threads = executor, n_threads

    def __call__(
        self, work: int, total: int, run: Callable[[int, int], None], grain: int = 1
    ) -> None:
        in_chunks(self.executor, self.n_threads, work, total, run, grain)

    def overlapped(
        self,
        work: int,
        first: Callable[[], T],
        total: int,
        run: Callable[[int, int], None],
        blocks_per_thread: int = 4,
    ) -> T:
        """:func:`overlapped` on this runner's threads, ``blocks_per_thread`` blocks each."""
        return overlapped(
            self.executor, self.n_threads, work, first, total, run,
            blocks_per_thread * self.n_threads,
        )  # fmt: skip


#: The runner of a single-threaded fit.
SERIAL = ChunkRunner()
