"""OK3 output kernel trees: growth (exact and histogram split search on the residual
factor), input binning, the flat ensemble arrays, one-tree and forest estimators
(paper section 2.4.2)."""
