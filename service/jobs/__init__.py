"""Training jobs off the event loop: job records, the local worker pool and its training
processes, the Dask cluster, and progress with its ETA. What a job computes is a task
(service.jobs.task) given by service.training."""
