"""okboost REST prediction service over :mod:`okcore`.

The package is layered so that HTTP never leaks into the numerics:

- ``routes/``  parse and shape HTTP only;
- ``inference`` and ``training`` turn validated requests into okcore calls;
- ``store`` and ``jobs`` keep models and training jobs on disk;
- ``okcore`` never imports anything from here.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
