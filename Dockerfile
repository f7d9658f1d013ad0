# okboost REST service. Build and run (the token from a file, kept out of `ps` and `docker inspect`):
#   docker build -t okboost .
#   docker run -p 8000:8000 -v okboost-models:/data/models \
#     -v "$PWD/token:/run/secrets/okboost_token:ro" -e OKBOOST_TOKEN_FILE=/run/secrets/okboost_token okboost
# Without OKBOOST_TOKEN or OKBOOST_TOKEN_FILE the container refuses to start (it listens on all
# of its interfaces): set OKBOOST_ALLOW_REMOTE_WITHOUT_TOKEN=1 only on a network you trust.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
RUN groupadd --system --gid 10001 okboost \
 && useradd --system --uid 10001 --gid okboost --home-dir /app --shell /usr/sbin/nologin okboost

# The package and its runtime dependencies (from PyPI), with the [dask] extra so the same
# image runs the replicas, the Dask scheduler and its workers (docs/DEPLOY.md); numba caches
# compiled kernels in NUMBA_CACHE_DIR because site-packages is not writable by the service user.
COPY pyproject.toml README.md ./
COPY okcore ./okcore
COPY service ./service
# the CLI (okboost serve is one of its commands) imports the Python client
COPY okboost_client ./okboost_client
RUN pip install ".[dask]" \
 && mkdir -p /data/models /tmp/numba-cache \
 && chown -R okboost:okboost /data /tmp/numba-cache

USER okboost
# Inside a container the service must listen on all interfaces to be reachable through
# the published port, so `okboost serve` requires a token here (see the top of this file).
ENV OKBOOST_HOST=0.0.0.0 \
    OKBOOST_PORT=8000 \
    OKBOOST_MODEL_DIR=/data/models \
    NUMBA_CACHE_DIR=/tmp/numba-cache
VOLUME ["/data/models"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health/ready', timeout=4)"
ENTRYPOINT ["okboost", "serve"]
