"""What okcore's parallel loops need to run unchanged on a cluster through joblib.

joblib's dask backend (``joblib.parallel_config(backend="dask")`` under a
``distributed.Client``) scatters every argument of a ``Parallel`` call that
``dask.sizeof`` measures above 1 kB to the workers once per call, and pickles smaller
ones into every task. ``dask.sizeof`` falls back on ``sys.getsizeof``, which counts only
an object's own header: a dataclass holding large arrays (the binned inputs, the CV
outputs) would look tiny and travel inside every task. Such classes define
``__sizeof__`` as :func:`nbytes_with_arrays` so they are scattered once.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


def nbytes_with_arrays(obj: Any) -> int:
    """The object's own size plus the bytes of the numpy arrays among its dataclass
    fields (what ``sys.getsizeof`` and so ``dask.sizeof`` report for it)."""
    arrays = (getattr(obj, f.name) for f in dataclasses.fields(obj))
    return object.__sizeof__(obj) + sum(a.nbytes for a in arrays if isinstance(a, np.ndarray))
