"""The outputs shown in the docs are what their commands answer: scripts/regen_examples.py
runs every marked example against a live server, and the pages must match that fresh run with
ids and times masked (numbers to 3 significant digits)."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from e2e_server import ROOT
from external_tools import require_tool

spec = importlib.util.spec_from_file_location(
    "regen_examples", ROOT / "scripts" / "regen_examples.py"
)
assert spec is not None and spec.loader is not None
regen = importlib.util.module_from_spec(spec)
sys.modules["regen_examples"] = regen
spec.loader.exec_module(regen)


def test_every_output_block_follows_its_example() -> None:
    for page in regen.pages():
        text = page.read_text(encoding="utf-8")
        examples = [m["name"] for m in regen.EXAMPLE.finditer(text)]
        outputs = [m["name"] for m in regen.OUTPUT.finditer(text)]
        assert len(set(examples)) == len(examples), f"{page.name}: example names repeat"
        assert set(outputs) <= set(examples), f"{page.name}: an output without its example"


def test_mask_hides_ids_times_and_last_digits() -> None:
    a = '{"model_id": "6556e283aa0b4f0c9d2e1f3a4b5c6d7e", "elapsed": 0.45, "auc": 0.89461}'
    b = '{"model_id": "0b4a6617aa0b4f0c9d2e1f3a4b5c6d7e", "elapsed": 12.3, "auc": 0.89459}'
    assert regen.mask(a) == regen.mask(b)
    assert regen.mask(a) != regen.mask(a.replace("0.89461", "0.901"))
    assert regen.mask('{"state": "queued"}') == regen.mask('{"state": "running"}')
    assert regen.mask('{"state": "done"}') != regen.mask('{"state": "failed"}')


def test_layout_keeps_the_json() -> None:
    value = {"edges": {"new_known": [[0, i, 0.25 + i] for i in range(30)]}, "k": [1] * 50}
    assert regen.json.loads(regen.layout(value)) == value
    assert max(len(line) for line in regen.layout(value).splitlines()) <= regen.WIDTH


@pytest.mark.server
def test_committed_outputs_match_a_fresh_run(capsys: pytest.CaptureFixture[str]) -> None:
    require_tool("curl", install="apt-get install curl")
    require_tool("perl", install="apt-get install perl")
    code = regen.main(["--check"])
    assert code == 0, capsys.readouterr().out
