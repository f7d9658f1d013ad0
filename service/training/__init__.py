"""Training a model, with no HTTP: from a validated request to a plan (estimator, data,
cost), the job's task (cross-validation, fit, store), and starting, waiting for and
deleting trained models."""
