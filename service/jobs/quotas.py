"""The bounds of the training queue and of one job's run time (QueueQuotas), shared by the
local pool (service.jobs.manager) and the tasks on a Dask cluster (service.jobs.cluster)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from service.errors import Busy


@dataclass(frozen=True)
class QueueQuotas:
    """What the queue holds, bounded (each beyond: 429 naming its setting), and how long
    one job may run (it is then stopped and failed)."""

    max_queued: int = 64
    max_queued_per_client: int = 64
    max_queued_bytes: int = 1 << 30
    max_seconds: float = 86_400.0

    def check(
        self, waiting: Sequence[tuple[int, str | None]], size: int, client: str | None
    ) -> None:
        """429 when one more job of ``size`` bytes from ``client`` would pass a bound;
        ``waiting``: (bytes held, client) of every job waiting now."""
        if len(waiting) >= self.max_queued:
            raise Busy(
                f"{len(waiting)} training jobs are already waiting; retry when some finish "
                "(or raise OKBOOST_MAX_QUEUED_JOBS)"
            )
        mine = sum(1 for _, owner in waiting if owner == client)
        if client is not None and mine >= self.max_queued_per_client:
            raise Busy(
                f"{mine} training jobs of this client ({client}) are already waiting, the most "
                "one client may queue (OKBOOST_MAX_QUEUED_JOBS_PER_CLIENT); retry when some "
                "finish"
            )
        total = sum(held for held, _ in waiting)
        if total + size > self.max_queued_bytes:
            raise Busy(
                f"the waiting training jobs hold {total} bytes of data and this one "
                f"{size}, over the limit of {self.max_queued_bytes} for all waiting jobs "
                "(OKBOOST_MAX_QUEUED_BYTES); retry when some finish"
            )

    def overdue(self, started: float | None) -> bool:
        """Whether a job that started at ``started`` (time.time(); None: not started) has
        run longer than ``max_seconds``."""
        return started is not None and time.time() - started > self.max_seconds

    def overtime_reason(self) -> str:
        return (
            f"stopped: the job ran longer than {self.max_seconds:g} s, the most one job may "
            "run (OKBOOST_MAX_JOB_SECONDS)"
        )
