"""Run the documented shell examples against a live server and write their outputs into the docs.

A runnable example in README.md or docs/*.md is a ```bash or ```python block preceded by
the marker ``<!-- example:NAME -->``; its output is the block between
``<!-- output:NAME -->`` and ``<!-- /output -->`` that follows it. All examples of one page
run, in page order, as one bash script (so a variable set by one example, such as
``$MODEL_ID``, is there for the next; a Python example runs as its own ``python -`` with
this interpreter), in an empty temporary folder, against a fresh server (``okboost serve``)
on a free loopback port: the code is the one shown, with ``http://127.0.0.1:8000`` pointed
at that server.

JSON lines of an output are shown laid out for reading, numbers rounded to 4 significant
digits. Ids and times change from run to run: ``--check`` compares the pages with a fresh run
with those masked (and numbers to 3 digits), as ``tests/e2e/test_docs_examples.py`` does.

Usage: python scripts/regen_examples.py [--check] [PAGE.md ...]   (default: every page with
examples). Needs curl and perl, as the examples do.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from e2e_server import Server  # noqa: E402  (the test suite's live server on a free port)

DOCUMENTED_URL = "http://127.0.0.1:8000"
EXAMPLE = re.compile(
    r"<!-- example:(?P<name>[\w-]+) -->\n```(?P<lang>bash|python)\n(?P<code>.*?)```\n", re.DOTALL
)
OUTPUT = re.compile(
    r"(?P<open><!-- output:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(?P<close><!-- /output -->)",
    re.DOTALL,
)
END = "@@okboost-example-end@@"
WIDTH = 96
ID = re.compile(r"\b[0-9a-f]{32}\b")
#: fields whose values are clock readings or durations, different on every run
TIME_FIELDS = {
    "created",
    "started",
    "finished",
    "elapsed",
    "eta",
    "training_time",
    "fit_seconds",
    "cpu_seconds",
}


def pages() -> list[Path]:
    """README.md and the docs pages that hold runnable examples."""
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [p for p in found if EXAMPLE.search(p.read_text(encoding="utf-8"))]


def round_numbers(value: Any, digits: int) -> Any:
    """``value`` with every float rounded to ``digits`` significant digits (times, the
    values of TIME_FIELDS, to hundredths of a second)."""
    if isinstance(value, float) and math.isfinite(value) and value != 0:
        return round(value, digits - 1 - math.floor(math.log10(abs(value))))
    if isinstance(value, list):
        return [round_numbers(v, digits) for v in value]
    if isinstance(value, dict):
        return {
            k: round(v, 2)
            if k in TIME_FIELDS and isinstance(v, float)
            else round_numbers(v, digits)
            for k, v in value.items()
        }
    return value


def layout(value: Any, indent: int = 0, lead: int = 0) -> str:
    """JSON on one line when it fits in WIDTH (after ``indent`` spaces and ``lead`` characters
    on its first line), else one member per line, recursively."""
    flat = json.dumps(value)
    if indent + lead + len(flat) <= WIDTH or not isinstance(value, dict | list) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(k)}: {layout(v, indent + 2, len(json.dumps(k)) + 2)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    rows, line = [], ""
    for item in (layout(v, indent + 2) for v in value):
        if line and (len(pad) + len(line) + len(item) + 2 > WIDTH or "\n" in item):
            rows.append(line + ",")
            line = ""
        line = f"{line}, {item}" if line else item
    rows.append(line)
    return "[\n" + "\n".join(pad + r for r in rows) + "\n" + " " * indent + "]"


def show(output: str) -> str:
    """An example's output as the docs show it: JSON lines laid out, numbers to 4 digits."""
    shown = []
    for line in output.strip("\n").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            shown.append(line.rstrip())
            continue
        shown.append(layout(round_numbers(value, 4)) if isinstance(value, dict | list) else line)
    return "\n".join(shown)


def mask(text: str) -> str:
    """``text`` with what changes between runs replaced: ids, times, the last digit, whether
    a new job has started, and the spaces that align printed columns."""
    text = re.sub(r"[ \t]+", " ", ID.sub("<id>", text))
    fields = "|".join(sorted(TIME_FIELDS))
    text = re.sub(rf'("(?:{fields})": )-?[0-9.e+-]+', r"\1<time>", text)
    # a job just submitted may or may not have started yet
    text = re.sub(r'"state": "(?:queued|running)"', '"state": "<queued or running>"', text)
    return re.sub(
        r"-?\d+\.\d+(?:e[+-]?\d+)?",
        lambda m: repr(round_numbers(float(m.group()), 3)),
        text,
    )


def as_bash(lang: str, code: str) -> str:
    """A shell command running ``code``: itself, or a Python example fed to this interpreter."""
    if lang == "bash":
        return code
    return f"PYTHONPATH={shlex.quote(str(ROOT))} {shlex.quote(sys.executable)} - <<'PYTHON'\n{code}PYTHON"


def run_page(page: Path, url: str) -> dict[str, str]:
    """The output of each example of ``page``, run in order in one bash script."""
    text = page.read_text(encoding="utf-8")
    examples = [(m["name"], as_bash(m["lang"], m["code"])) for m in EXAMPLE.finditer(text)]
    script = "set -euo pipefail\n" + "".join(
        f"{code.replace(DOCUMENTED_URL, url)}\necho; echo '{END}'\n" for _, code in examples
    )
    with tempfile.TemporaryDirectory() as work:
        run = subprocess.run(
            ["bash", "-c", script], cwd=work, capture_output=True, text=True, timeout=600
        )
    chunks = run.stdout.split(END + "\n")
    if run.returncode != 0 or len(chunks) != len(examples) + 1:
        done = len(chunks) - 1
        failed = examples[done][0] if done < len(examples) else "?"
        raise RuntimeError(
            f"{page.name}: example {failed!r} failed (exit {run.returncode}):\n"
            f"{chunks[-1]}\n{run.stderr}"
        )
    return {
        name: show(out).replace(url, DOCUMENTED_URL)
        for (name, _), out in zip(examples, chunks[:-1], strict=True)
    }


def render(text: str, outputs: dict[str, str]) -> str:
    """``text`` with each output block replaced by the fresh output of its example."""

    def block(m: re.Match[str]) -> str:
        if m["name"] not in outputs:
            raise KeyError(f"output block {m['name']!r} has no example of that name")
        return f"{m['open']}```text\n{outputs[m['name']]}\n```\n{m['close']}"

    return OUTPUT.sub(block, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", type=Path, help="pages (default: all with examples)")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    stale = []
    with tempfile.TemporaryDirectory() as tmp:
        for page in [p.resolve() for p in args.pages] or pages():
            (Path(tmp) / page.stem).mkdir()
            server = Server(Path(tmp) / page.stem / "models").start()
            try:
                outputs = run_page(page, server.url)
            finally:
                server.stop()
            old = page.read_text(encoding="utf-8")
            new = render(old, outputs)
            if not args.check:
                if new != old:
                    page.write_text(new, encoding="utf-8")
                print(f"{page.relative_to(ROOT)}: {len(outputs)} examples run")
            elif mask(new) != mask(old):
                diff = difflib.unified_diff(
                    mask(old).splitlines(),
                    mask(new).splitlines(),
                    "committed",
                    "fresh run",
                    lineterm="",
                )
                stale.append(f"{page.relative_to(ROOT)}:\n" + "\n".join(diff))
    for report in stale:
        print(report)
    if stale:
        print("outputs differ: run python scripts/regen_examples.py and commit the pages")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
