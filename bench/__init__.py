"""Reproduction of the OKBoost paper's experiments (Geurts, Wehenkel & d'Alche-Buc, ICML 2007).

Run each script from the repository root, e.g. ``python -m bench.friedman1``; see docs/RESULTS.md.
"""
