"""Kernel models as base learners: sparse kernel ridge regression on random subsets,
Sun & Yao's regularized ensemble step and the boosted estimator (Sun & Yao, ICDM 2006)."""
