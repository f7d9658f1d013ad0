"""Job records: what a training job is and the small JSON file that says so.

A job goes ``queued -> running -> done | failed | cancelled`` (``queued -> cancelled``
too). Its record is ``<store>/jobs/<id>.json`` (loss curves downsampled to at most
service.jobs.progress.CURVE_POINTS points: a few KB at any number of trees), written on
every state or phase change and at most once a second while trees grow (a count left
unwritten is written a second after it came: :class:`RecordWriter`), by whoever runs
the job: a worker thread of a replica (service.jobs.manager) or a Dask worker
(service.jobs.cluster). What the API reports is the last record written, so a record on
disk never lags what a client was told. A cancel for a job that another replica or the
cluster runs is an empty ``<id>.stop`` file beside the record, which the runner checks
after every tree. A record that fails validation (service.schemas.records.JobRecord) is
quarantined: the job is listed and answered with the state ``invalid`` and the reason
(:class:`QuarantinedJob`), never run or resumed, until DELETE /jobs/{id} removes the record.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from service.errors import (
    JobRecordInvalid,
    NotFound,
    RecordInvalid,
    ServiceError,
    StoreCorrupted,
    UnknownJob,
)
from service.jobs.progress import Progress
from service.schemas.records import JobRecord, validation_reason
from service.store.ids import valid_id
from service.store.model_store import ModelStore, write_json_atomic

log = logging.getLogger("okboost.jobs")

__all__ = [
    "ACTIVE",
    "Job",
    "JobRecords",
    "QuarantinedJob",
    "RecordWriter",
    "check_job_record",
    "failure_reason",
]

ACTIVE = ("queued", "running")
DELETED_REASON = "cancelled: the model was deleted"
PERSIST_EVERY = 1.0  # seconds between progress writes while trees grow


@dataclass
class Job:
    """One training job: its state, its live progress, and its last written record."""

    job_id: str
    model_id: str
    progress: Progress
    state: str = "queued"
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    error: str | None = None
    record: dict[str, Any] = field(default_factory=dict)  # as last written to disk
    live: bool = True  # False for a job read back from its record (no full curves)
    # who runs it: {"kind": "local", "host", "pid"} (a replica's pool) or {"kind": "dask",
    # "key", ...} (service.jobs.cluster); attempt: starts so far (a cluster reruns a task whose
    # worker died)
    runner: dict[str, Any] | None = None
    attempt: int = 0
    warnings: list[str] = field(default_factory=list)  # degenerate training data
    exception: BaseException | None = field(default=None, repr=False)
    cancel_event: threading.Event = field(default_factory=threading.Event, repr=False)
    finished_event: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def done(self) -> int:
        """Trees done, as last written (and reported)."""
        return int(self.record.get("done", 0))

    def snapshot(self, now: float) -> dict[str, Any]:
        """The record to write now: state, times, progress, downsampled curves, the ETA. A
        job read back from its record (ended by a restart, or cancelled through another
        replica) keeps the progress its record says: its phase, unit and loss curves."""
        eta = self.progress.eta(now, self.started) if self.state == "running" else None
        progress = self.progress.record()
        if self.progress.restored:
            progress = {k: self.record.get(k, v) for k, v in progress.items()}
        return {
            "job_id": self.job_id,
            "model_id": self.model_id,
            "state": self.state,
            "created": self.created,
            "started": self.started,
            "finished": self.finished,
            "error": self.error,
            "updated": now,
            "eta": 0.0 if self.state == "done" else eta,
            "runner": self.runner,
            "attempt": self.attempt,
            "warnings": self.warnings,
            **progress,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Job:
        """The job a record describes, validated (service.schemas.records.JobRecord): a
        RecordInvalid (409) names what is wrong."""
        check_job_record(record)
        total = max(int(record.get("total", 1)), 1)
        job = cls(
            job_id=record["job_id"],
            model_id=record["model_id"],
            progress=Progress(total=total, done=int(record.get("done", 0)), restored=True),
            state=record["state"],
            created=float(record.get("created", 0.0)),
            started=record.get("started"),
            finished=record.get("finished"),
            error=record.get("error"),
            record=dict(record),
            live=False,
            runner=record.get("runner"),
            attempt=int(record.get("attempt", 0)),
            warnings=list(record.get("warnings", [])),
        )
        job.record.setdefault("curve_step", 1)  # records written before curves were sampled
        if job.state not in ACTIVE:
            job.finished_event.set()
        return job

    def info(self, curves: bool = False) -> dict[str, Any]:
        """The public view of the last written record, with the elapsed time and the ETA as
        of now (from the live progress of a job of this server; else counted down since the
        record was written); the loss curves only when asked for.

        State, times and progress are all the record's: a job finishing in another thread
        has its new state before its final record is written, and an answer must not pair
        that state with the previous record's progress."""
        now = time.time()
        rec = self.record
        state = rec.get("state", self.state)
        started, finished = rec.get("started", self.started), rec.get("finished", self.finished)
        eta = rec.get("eta")
        if state == "running" and self.live:
            eta = self.progress.eta(now, started)
        elif state == "running" and eta is not None:
            eta = max(eta - (now - float(rec.get("updated", now))), 0.0)
        if started is None:
            elapsed = 0.0
        else:
            elapsed = (finished or now) - started
        done, total = int(rec.get("done", 0)), max(int(rec.get("total", 1)), 1)
        phase_started = rec.get("phase_started")
        in_phase = None if state != "running" or phase_started is None else now - phase_started
        info: dict[str, Any] = {
            "job_id": self.job_id,
            "model_id": self.model_id,
            "state": state,
            "phase": rec.get("phase"),
            "phase_elapsed": None if in_phase is None else max(in_phase, 0.0),
            "progress": {
                "done": done,
                "total": total,
                "fraction": done / total,
                "unit": rec.get("unit", "tree"),
            },
            "created": self.created,
            "started": started,
            "finished": finished,
            "elapsed": elapsed,
            "eta": eta,
            "last_train_loss": rec.get("last_train_loss"),
            "last_validation_loss": rec.get("last_validation_loss"),
            "error": rec.get("error", self.error),
            "warnings": rec.get("warnings", self.warnings),
        }
        if curves:
            if self.live:
                info.update(self.progress.curves(done))
            else:
                info.update(
                    train_loss=rec.get("train_loss") or [],
                    validation_loss=rec.get("validation_loss"),
                    curve_step=int(rec.get("curve_step", 1)),
                )
        return info


@dataclass
class QuarantinedJob:
    """A job whose record fails validation, as GET /jobs lists it: its id, the model its
    record names (when it names a valid one), when the record was last written, and what is
    wrong with it."""

    job_id: str
    model_id: str | None
    created: float
    error: str
    state: str = "invalid"

    def info(self, curves: bool = False) -> dict[str, Any]:
        """The public view (service.schemas.api.InvalidJobInfo); there are no curves."""
        return {
            "job_id": self.job_id,
            "model_id": self.model_id,
            "state": self.state,
            "created": self.created,
            "error": self.error,
        }


def check_job_record(record: Any) -> None:
    """Raise RecordInvalid unless ``record`` is a valid job record."""
    try:
        JobRecord.model_validate(record)
    except ValidationError as exc:
        job_id = record.get("job_id") if isinstance(record, dict) else None
        raise JobRecordInvalid(
            f"the record of job '{str(job_id)[:64]}' is invalid: {validation_reason(exc)}"
        ) from None


def failure_reason(exc: BaseException) -> str:
    """What a failed job's record says: the message of a user error (bad data, a service
    limit), else the exception's type and message."""
    if isinstance(exc, ValueError | ServiceError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


class JobRecords:
    """The job records of a model store and the stop requests beside them: what every
    replica over the store reads, and what runs a job writes, in this process or on a Dask
    worker (service.jobs.cluster). ``<store>/jobs/<id>.json`` is the record; an empty
    ``<id>.stop`` asks whoever runs the job to stop after its current tree."""

    def __init__(self, store: ModelStore) -> None:
        self.store = store
        self.dir = store.root / "jobs"
        self.dir.mkdir(parents=True, exist_ok=True)
        self._quarantined: set[str] = set()  # jobs whose invalid record was logged
        # ended jobs whose end (their model's status, their record) could not be written,
        # e.g. on a full disk: answered from here and written again (:meth:`retry_unwritten`)
        self._unwritten: dict[str, Job] = {}
        store.as_it_stands = self.model_view

    def path(self, job_id: str) -> Path:
        if not valid_id(job_id):
            raise NotFound(f"unknown job '{job_id[:64]}': job ids are 32 hex digits")
        return self.dir / f"{job_id}.json"

    def persist(self, job: Job) -> None:
        record = job.snapshot(time.time())
        check_job_record(record)  # never write what cannot be read back
        write_json_atomic(self.path(job.job_id), record)
        job.record = record

    def read_job(self, job_id: str) -> Job:
        """The job as its record says: 404 when there is none, JobRecordInvalid (409, the
        job quarantined) when the record is not JSON, fails validation, names another job
        or is not a regular file in the store's own jobs folder (a link is never followed)."""
        path = self.path(job_id)
        try:
            foreign = not stat.S_ISREG(os.lstat(path).st_mode) or self.dir.is_symlink()
            if foreign:  # a link would make the store read what lies elsewhere
                reason = (
                    "the record is a symbolic link or a special file, which the store never writes"
                )
                raise self._invalid(job_id, reason, None)
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UnknownJob(job_id) from None
        except UnicodeDecodeError as exc:
            raise self._invalid(job_id, f"the record is not JSON: {exc}", None) from None
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise self._invalid(job_id, f"the record is not JSON: {exc}", None) from None
        try:
            JobRecord.model_validate(record)
        except ValidationError as exc:
            raise self._invalid(job_id, validation_reason(exc), record) from None
        if record["job_id"] != job_id:
            reason = f"the record names job '{str(record['job_id'])[:64]}'"
            raise self._invalid(job_id, reason, record)
        return Job.from_record(record)

    def _invalid(self, job_id: str, reason: str, record: Any) -> JobRecordInvalid:
        """The quarantine of a job whose record fails validation (logged once)."""
        if job_id not in self._quarantined:
            self._quarantined.add(job_id)
            log.warning("job %s is quarantined (listed as invalid): %s", job_id, reason)
        model_id = record.get("model_id") if isinstance(record, dict) else None
        return JobRecordInvalid(
            f"job '{job_id}' is quarantined, its record is invalid ({reason}): it is listed "
            f"with the state 'invalid' until DELETE /jobs/{job_id} removes its record",
            details=[{"loc": ["record", job_id], "msg": reason}],
            model_id=model_id if isinstance(model_id, str) and valid_id(model_id) else None,
        )

    def quarantined(self, job_id: str, exc: JobRecordInvalid) -> QuarantinedJob:
        """What GET /jobs reports for a job whose record is invalid (404 once it is gone)."""
        try:
            written = self.path(job_id).lstat().st_mtime
        except FileNotFoundError:
            raise UnknownJob(job_id) from None
        return QuarantinedJob(job_id, exc.model_id, written, str(exc.details[0]["msg"]))

    def remove_quarantined(self, job_id: str) -> QuarantinedJob:
        """Remove the record of a quarantined job (and a stop request beside it); what it
        was listed as."""
        try:
            self.read_job(job_id)
        except JobRecordInvalid as exc:
            job = self.quarantined(job_id, exc)
        else:
            raise ValueError(f"job '{job_id}' is not quarantined")
        self.path(job_id).unlink(missing_ok=True)
        self.clear_stop(job_id)
        self._quarantined.discard(job_id)
        log.warning("job %s: its invalid record was removed", job_id)
        return job

    def request_stop(self, job_id: str) -> None:
        self._stop_path(job_id).touch()

    def stop_requested(self, job_id: str) -> bool:
        return self._stop_path(job_id).exists()

    def clear_stop(self, job_id: str) -> None:
        self._stop_path(job_id).unlink(missing_ok=True)

    def _stop_path(self, job_id: str) -> Path:
        return self.path(job_id).with_suffix(".stop")

    def mark_model(self, model_id: str, status: str, error: str | None) -> None:
        """Give a model still "training" the job's final status (not one deleted meanwhile,
        nor one whose record is unreadable). A record that cannot be written (a full disk)
        raises StorageFull."""
        try:
            if self.store.read_record(model_id).get("status") == "training":
                self.store.update_record(model_id, status=status, error=error)
        except (NotFound, RecordInvalid, StoreCorrupted):
            return  # deleted meanwhile, or quarantined

    def finish(self, job: Job, state: str, error: str | None) -> None:
        """End ``job`` in ``state`` and write its end (:meth:`write_end`)."""
        job.state, job.error, job.finished = state, error, time.time()
        if state == "done":
            job.progress.complete()
        self.write_end(job)
        self.clear_stop(job.job_id)
        job.finished_event.set()

    def write_end(self, job: Job) -> bool:
        """Write an ended job's end: its model's status (unless done: the model's own save
        wrote "ready"), then its record, so whoever reads the job as ended (another replica
        too) finds its model ended. What cannot be written now (a full disk) is kept, still
        answered (:meth:`unwritten`), and written again by :meth:`retry_unwritten`: a model
        never says "training" after its job ended. Whether all was written."""
        try:
            if job.state != "done":
                self.mark_model(job.model_id, job.state, job.error)
            self.persist(job)
        except ServiceError as exc:
            if job.job_id not in self._unwritten:
                log.error("job %s: its end cannot be written yet: %s", job.job_id, exc)
            job.record = job.snapshot(time.time())
            self._unwritten[job.job_id] = job
            return False
        self._unwritten.pop(job.job_id, None)
        return True

    def retry_unwritten(self) -> None:
        """Write again the ends that could not be written (:meth:`write_end`)."""
        for job in list(self._unwritten.values()):
            self.write_end(job)

    def unwritten(self, job_id: str) -> Job | None:
        """An ended job whose end is not written yet (its record on disk says otherwise)."""
        return self._unwritten.get(job_id)

    def model_view(self, record: dict[str, Any]) -> dict[str, Any]:
        """A model's record as it stands: one still "training" whose job ended without its
        end being written (a full disk; written again first) has the job's state and error."""
        if not self._unwritten:
            return record
        self.retry_unwritten()
        model_id = record.get("model_id")
        job = next((j for j in list(self._unwritten.values()) if j.model_id == model_id), None)
        if record.get("status") != "training" or job is None:
            return record
        return dict(record, status=job.state, error=job.error)

    def fail(self, job: Job, exc: BaseException) -> None:
        """Finish ``job`` as failed by ``exc`` (logged unless it is the user's error)."""
        reason = failure_reason(exc)
        if not isinstance(exc, ValueError | ServiceError):
            log.error("training job %s failed: %s", job.job_id, reason)
        self.finish(job, "failed", reason)

    def settle(self, job: Job, outcome: str) -> None:
        """Finish ``job`` by its task's outcome: "done", else cancelled. Deletion wins: a
        job whose model was deleted before its save ("deleted": nothing was written,
        service.store.model_store.write_model) or after it, before the job is finished
        here (its record is gone), is cancelled, not done."""
        if outcome == "done" and self.model_exists(job.model_id):
            self.finish(job, "done", None)
        elif outcome in ("done", "deleted"):
            self.finish(job, "cancelled", DELETED_REASON)
        else:
            self.finish(job, "cancelled", "cancelled by request")

    def model_exists(self, model_id: str) -> bool:
        try:
            self.store.read_record(model_id)
        except NotFound:
            return False
        except ServiceError:
            return True  # there, but unreadable (quarantined): not deleted
        return True


class RecordWriter:
    """Writes a running job's record as its fit reports (one per running job, in whoever runs
    it): a new phase at once, trees at most every PERSIST_EVERY seconds, and a report the
    throttle left unwritten once it has waited PERSIST_EVERY seconds with no report after it
    (:meth:`flush`: called by a runner that looks at its job often, or by a thread of the
    writer's own while it is entered; a fit whose next report is long in coming, e.g. the
    automatic choice's next candidate fit, would otherwise show the count of a unit ago all
    that time). The final record is the job's end
    (:meth:`JobRecords.finish`), written after the writer is left."""

    def __init__(self, records: JobRecords, job: Job) -> None:
        self.records, self.job = records, job
        self._lock = threading.Lock()
        self._written = self._heard = time.monotonic()
        self._pending = False  # a report not written yet
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def report(self, p: Any) -> None:
        """Take one FitProgress and write the record when it is due."""
        with self._lock:
            new_phase = self.job.progress.report(p, time.time())
            self._heard = time.monotonic()
            if new_phase or self._heard - self._written >= PERSIST_EVERY:
                self._write()
            else:
                self._pending = True

    def saving(self) -> None:
        """The fit is over and the model is being written: a new phase, written at once."""
        with self._lock:
            self.job.progress.saving(time.time())
            self._write()

    def flush(self) -> None:
        """Write a report left unwritten once PERSIST_EVERY seconds passed since it came."""
        with self._lock:
            if self._pending and time.monotonic() - self._heard >= PERSIST_EVERY:
                self._write()

    def _write(self) -> None:
        self._written, self._pending = time.monotonic(), False
        self.records.persist(self.job)

    def _flushing(self) -> None:
        while not self._stop.wait(PERSIST_EVERY / 4):
            try:
                self.flush()
            except ServiceError as exc:  # e.g. a full disk: the next write tries again
                log.warning("job %s: its record cannot be written: %s", self.job.job_id, exc)

    def __enter__(self) -> RecordWriter:
        name = f"okboost-record-{self.job.job_id[:8]}"
        self._thread = threading.Thread(target=self._flushing, name=name, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
