"""Every results file a bench script writes is stamped with where and when it was measured:
bench.common.write_result adds the commit, a dirty flag (uncommitted changes in okcore/,
service/ or bench/, results excluded), the date, the CPU model and core count and the load."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import common  # noqa: E402

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A one-commit git repository with the folders the dirty flag looks at."""
    for rel in ("okcore/a.py", "service/b.py", "bench/c.py", "bench/results/r.txt", "docs/d.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(
        tmp_path,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.org",
        "commit",
        "-q",
        "-m",
        "one",
    )
    return tmp_path


@needs_git
def test_stamp_names_the_commit_and_a_clean_tree(checkout: Path) -> None:
    stamp = common.provenance(checkout)
    assert stamp["commit"] == _git(checkout, "rev-parse", "HEAD")
    assert stamp["dirty"] is False
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp["date"])
    assert stamp["machine"]["cores"] >= 1 and stamp["machine"]["cpu"]
    assert len(stamp["load_average"]) == 3


@needs_git
@pytest.mark.parametrize("rel", ["okcore/a.py", "service/b.py", "bench/c.py", "bench/new.py"])
def test_uncommitted_code_makes_the_stamp_dirty(checkout: Path, rel: str) -> None:
    (checkout / rel).write_text("changed\n")
    assert common.provenance(checkout)["dirty"] is True


@needs_git
@pytest.mark.parametrize("rel", ["bench/results/r.txt", "bench/results/new.json", "docs/d.md"])
def test_results_and_docs_do_not_make_it_dirty(checkout: Path, rel: str) -> None:
    (checkout / rel).write_text("changed\n")
    assert common.provenance(checkout)["dirty"] is False


def test_outside_a_checkout_the_commit_is_unknown(tmp_path: Path) -> None:
    stamp = common.provenance(tmp_path)
    assert stamp["commit"] is None and stamp["dirty"] is None
    assert common.provenance_line(stamp).startswith("# commit unknown (dirty unknown);")


@needs_git
def test_write_result_stamps_json_and_text(tmp_path: Path) -> None:
    head = _git(REPO, "rev-parse", "HEAD")
    jpath = common.write_result(tmp_path / "sub" / "run.json", {"rows": [1, 2], "provenance": 0})
    record = json.loads(jpath.read_text())
    assert list(record) == ["provenance", "rows"] and record["rows"] == [1, 2]
    assert record["provenance"]["commit"] == head
    assert isinstance(record["provenance"]["dirty"], bool)
    tpath = common.write_result(tmp_path / "run.txt", "| a | b |\n")
    first, rest = tpath.read_text().split("\n", 1)
    assert first.startswith(f"# commit {head}") and "cores; load average" in first
    assert rest == "| a | b |\n"


# Writes in bench/ that are not results files: /proc knobs, members of archives built in
# memory for the hostile-input attacks and request bodies, a server's log, the file outside
# the store that the linked-folder attack points to.
NOT_RESULTS = (
    "/proc/",
    'tarfile.open(fileobj=buf, mode="w:gz"',
    'dst.open("zeros.npy", "w"',
    'zf.open("format.npy", "w"',
    'log.open("wb")',
    "np.save(buf, ",
    '(outside / "secret.txt").write_text(',
)
WRITES = re.compile(
    r"\.write_text\(|\.write_bytes\(|json\.dump\(|np\.save\(|open\([^)]*['\"][wa]b?['\"]"
)


def test_every_results_file_is_written_through_write_result() -> None:
    """No script writes a file of its own: only bench.common.write_result does, so every
    result carries the stamp (figures and caches aside: they are not results)."""
    found = []
    for path in sorted((REPO / "bench").glob("*.py")):
        if path.name == "common.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if WRITES.search(line) and not any(ok in line for ok in NOT_RESULTS):
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert not found, "write results with bench.common.write_result:\n" + "\n".join(found)
