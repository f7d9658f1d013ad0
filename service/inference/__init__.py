"""Answers of a stored model, with no HTTP: predictions, kernel scores and edges
(service.inference.predict) and scores against a truth (service.inference.evaluation)."""
