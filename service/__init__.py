"""okboost REST prediction service over :mod:`okcore`.

The package is layered so that HTTP never leaks into the numerics (each layer imports
only those below it; tests/service/test_service_layout.py checks that there is no cycle):

- ``routes/``     one router per resource: parse the request, call one function, shape
                  the answer; ``app``, ``deps`` and ``cli`` assemble the service;
- ``training/``   and ``inference/``: validated requests to okcore calls, no HTTP;
- ``jobs/``       training jobs: records, the local pool and its processes, the Dask
                  cluster, progress;
- ``store/``      models on disk: the model store, ids, archives, paginated listings;
- ``schemas/``    the API's request and response models; ``http/`` the transport
                  (bodies, array parts, answer encoding, guards);
- ``errors``, ``config``, ``vertex_ids`` and ``prometheus`` are shared single modules;
- ``okcore`` never imports anything from here.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
