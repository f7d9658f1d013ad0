"""The user docs say where the benchmark datasets come from and how the benchmarks find
them (the folder named by OKBOOST_DATA), and never send a reader to a folder beside the
repository that a user does not have."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
USER_PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
GETTING_STARTED = REPO / "docs" / "getting-started.md"


def test_no_page_points_to_a_shared_folder_beside_the_repository() -> None:
    found = [
        f"{page.relative_to(REPO)}:{number}: {line.strip()}"
        for page in USER_PAGES
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\.\./shared|\bshared/data\b", line)
    ]
    assert not found, "say OKBOOST_DATA and the dataset's origin instead:\n" + "\n".join(found)


def test_every_dataset_folder_a_benchmark_reads_is_described() -> None:
    """Each ``data_dir() / "<folder>"`` of bench/ (and the graphs network_completion reads by
    name) has a row of getting-started's dataset table."""
    folders = {"cora", "citeseer"}
    for script in (REPO / "bench").glob("*.py"):
        folders |= set(re.findall(r'data_dir\(\) / "(\w+)"', script.read_text(encoding="utf-8")))
    text = GETTING_STARTED.read_text(encoding="utf-8")
    section = text[text.index("## Data for the benchmarks") :]
    assert "OKBOOST_DATA" in section
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    described = {name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])}
    assert folders - described == set(), "describe these dataset folders in getting-started"
