"""A live uvicorn server (``okboost serve``) on a free localhost port, in a subprocess."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """``python -m service.cli serve`` on 127.0.0.1:<free port> with its own model dir."""

    def __init__(self, model_dir: Path, **env: str) -> None:
        self.model_dir = model_dir
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> Server:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "OKBOOST_LOG_LEVEL": "warning", **self.env}
        self.log = open(self.model_dir.parent / f"server-{port}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "service.cli",
                "serve",
                "--port",
                str(port),
                "--model-dir",
                str(self.model_dir),
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.logs()}")
            try:
                if httpx.get(f"{self.url}/health/live", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError(f"server did not start: {self.logs()}")

    def logs(self) -> str:
        self.log.flush()
        return (self.model_dir.parent / Path(self.log.name).name).read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self.log.close()
