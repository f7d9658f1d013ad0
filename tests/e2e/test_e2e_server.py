"""The live-server harness itself: a server that fails to start gives an error with the cause
and its log, and no server process (nor a child of one) outlives a stop, a failed start, the
interpreter's exit or a SIGTERM. Stand-in servers (a few lines of Python) make each case
certain and quick."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e_server import ROOT, TIMEOUT_ENV, Server, ServerStartError, start_timeout

# answers 200 to every GET on the port given as its argument
ANSWERS = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class Live(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

HTTPServer(("127.0.0.1", int(sys.argv[1])), Live).serve_forever()
"""
# starts a child that sleeps, says both pids, and never answers
HANGS = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("starting", os.getpid(), child.pid, flush=True)
time.sleep(600)
"""
FAILS = "import sys; print('cannot bind: no such setting', file=sys.stderr); sys.exit(3)"


class StandIn(Server):
    def __init__(self, model_dir: Path, script: str) -> None:
        super().__init__(model_dir)
        self.script = script

    def command(self, port: int) -> list[str]:
        return [sys.executable, "-c", self.script, str(port)]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent to read its status does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_gone(*pids: int) -> list[int]:
    """The pids still running after up to 30 s of waiting for them to end."""
    for _ in range(300):
        if not any(alive(p) for p in pids):
            break
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


@pytest.fixture(autouse=True)
def _linux_proc() -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads process states from /proc (Linux)")


def test_a_server_that_exits_gives_its_exit_code_and_log(tmp_path: Path) -> None:
    server = StandIn(tmp_path / "models", FAILS)
    with pytest.raises(ServerStartError) as err:
        server.start()
    message = str(err.value)
    assert "exited with code 3" in message and server.url in message
    assert "cannot bind: no such setting" in message
    assert server.proc is None and server not in Server.running


def test_a_server_that_never_answers_is_killed_with_its_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, "2")
    server = StandIn(tmp_path / "models", HANGS)
    with pytest.raises(ServerStartError) as err:
        server.start()
    message = str(err.value)
    assert f"no answer from /health/live within 2 s (set {TIMEOUT_ENV}" in message
    line = next(x for x in message.splitlines() if x.startswith("starting"))
    pids = [int(p) for p in line.split()[1:]]
    assert wait_gone(*pids) == []


def test_stop_ends_the_server(tmp_path: Path) -> None:
    server = StandIn(tmp_path / "models", ANSWERS).start()
    assert server.proc is not None and server in Server.running
    pid = server.proc.pid
    server.stop()
    assert wait_gone(pid) == [] and server not in Server.running
    server.stop()  # a second stop does nothing


@pytest.mark.parametrize("end", ["exit", "sigterm"])
def test_no_server_outlives_the_interpreter_that_started_it(tmp_path: Path, end: str) -> None:
    """A test process that exits (or is sent SIGTERM) without stopping its server."""
    script = f"""
import sys, time
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_e2e_server import ANSWERS, StandIn
server = StandIn(Path({str(tmp_path / "models")!r}), ANSWERS).start()
print(server.proc.pid, flush=True)
if {end == "sigterm"}:
    time.sleep(600)
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    pid = int(proc.stdout.readline())
    if end == "sigterm":
        assert alive(pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM
    else:
        assert proc.wait(timeout=60) == 0
    assert wait_gone(pid) == []


def test_the_deadline_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert start_timeout() == 180
    monkeypatch.setenv(TIMEOUT_ENV, "600")
    assert start_timeout() == 600
    for bad in ("soon", "0", "-5", "nan"):
        monkeypatch.setenv(TIMEOUT_ENV, bad)
        with pytest.raises(ValueError, match=f"{TIMEOUT_ENV}=.*in seconds"):
            start_timeout()


def test_the_harness_server_runs_in_its_own_process_group(tmp_path: Path) -> None:
    server = StandIn(tmp_path / "models", ANSWERS).start()
    try:
        assert server.proc is not None
        assert os.getpgid(server.proc.pid) == server.proc.pid != os.getpgid(0)
    finally:
        server.stop()
