"""A live uvicorn server (``okboost serve``) on a free localhost port, in a subprocess.

The server runs in its own process group (with the fork server and training processes it
starts), and every group this module started is killed when the server is stopped, when it
fails to start, and at interpreter exit: no server outlives the tests. The start deadline is
``OKBOOST_TEST_SERVER_TIMEOUT`` seconds (default 180, generous for a loaded machine); when
the server does not answer by then, or exits first, the error says which, with its port, its
exit code and the tail of its log (stdout and stderr).
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_ENV = "OKBOOST_TEST_SERVER_TIMEOUT"
DEFAULT_TIMEOUT_S = 180.0
LOG_TAIL_CHARS = 6000
# a port taken between free_port() and the server's bind: start again on another port
PORT_ATTEMPTS = 3


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_timeout() -> float:
    """Seconds a server may take to answer /health/live: ``OKBOOST_TEST_SERVER_TIMEOUT``."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise ValueError(f"{TIMEOUT_ENV}={raw!r}: give the start deadline in seconds, e.g. 300")
    return value


class ServerStartError(RuntimeError):
    """The server did not answer in time or exited: the cause and the tail of its log."""


class Server:
    """``python -m service.cli serve`` on 127.0.0.1:<free port> with its own model dir."""

    running: set[Server] = set()  # started and not yet stopped, stopped at interpreter exit

    def __init__(self, model_dir: Path, **env: str) -> None:
        self.model_dir = model_dir
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.log_path = model_dir.parent / "server.log"

    def command(self, port: int) -> list[str]:
        """The server's command line."""
        serve = ["-m", "service.cli", "serve", "--port", str(port)]
        return [sys.executable, *serve, "--model-dir", str(self.model_dir)]

    def start(self) -> Server:
        """Start the server and wait until it answers; on failure it is stopped and
        :class:`ServerStartError` says why."""
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                return self._start_once()
            except ServerStartError as exc:
                if attempt == PORT_ATTEMPTS or "address already in use" not in str(exc).lower():
                    raise
        raise AssertionError("unreachable")

    def _start_once(self) -> Server:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = self.model_dir.parent / f"server-{port}.log"
        env = {**os.environ, "OKBOOST_LOG_LEVEL": "warning", **self.env}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                self.command(port),
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, killed as one by stop()
            )
        Server.running.add(self)
        try:
            timeout = start_timeout()
            deadline = time.monotonic() + timeout
            while True:
                code = self.proc.poll()
                if code is not None:
                    raise self._failed(f"the server exited with code {code} before answering")
                try:
                    if httpx.get(f"{self.url}/health/live", timeout=1).status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise self._failed(
                        f"no answer from /health/live within {timeout:g} s "
                        f"(set {TIMEOUT_ENV} to wait longer)"
                    )
                time.sleep(0.1)
        except BaseException:
            self.stop(signal.SIGKILL)
            raise

    def _failed(self, cause: str) -> ServerStartError:
        return ServerStartError(
            f"server on {self.url} did not start: {cause}\n"
            f"--- end of its log ({self.log_path}) ---\n{self.logs()[-LOG_TAIL_CHARS:]}"
        )

    def logs(self) -> str:
        """Everything the server wrote to stdout and stderr so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Send ``sig`` to the server (SIGTERM: a clean shutdown, SIGKILL: a crash), wait for
        it (SIGKILL after 30 s), then kill whatever is left of its process group."""
        proc, self.proc = self.proc, None
        Server.running.discard(self)
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the fork server and its training processes
        except (ProcessLookupError, PermissionError):
            pass


@atexit.register
def _stop_every_server() -> None:
    for server in list(Server.running):
        server.stop(signal.SIGKILL)


def _stop_every_server_and_die(signum: int, frame: object) -> None:
    """A SIGTERM to the tests (a CI timeout) stops the servers, then ends as SIGTERM would."""
    _stop_every_server()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


# atexit does not run when a signal ends the process: SIGTERM gets a handler that stops the
# servers first (only where nothing else handles it; Ctrl-C raises KeyboardInterrupt, and
# the fixture finalisers and atexit run)
if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
    try:
        signal.signal(signal.SIGTERM, _stop_every_server_and_die)
    except ValueError:  # imported outside the main thread
        pass
