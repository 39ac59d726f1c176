"""Golden reports: each example analyzed on H100_SXM, compared field by field with
tests/golden/<example>.report.json (floats to 1e-9 relative, everything else exactly).

Regenerate (after a deliberate change, and review the diff):
    SOLAR_UPDATE_GOLDEN=1 pytest tests/python/test_golden.py
"""

from __future__ import annotations

import json
import math
import os

import pytest

import solar
from conftest import EXAMPLES, GOLDEN, ROOT

EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES.glob("*.solar"))
DEVICE = "H100_SXM"  # a fixed, sourced device: never the machine-dependent host
REL_TOL = 1e-9


def current_report(name: str) -> dict:
    # A path relative to the repository root, so that the report's `program.source` is the
    # same on every machine.
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return solar.analyze(f"examples/{name}.solar", arch=DEVICE).to_dict()
    finally:
        os.chdir(cwd)


def diff(expected, actual, path="$"):
    """Every difference between two JSON values, as 'path: message' lines."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = [f"{path}.{k}: missing" for k in expected.keys() - actual.keys()]
        out += [f"{path}.{k}: unexpected" for k in actual.keys() - expected.keys()]
        for k in expected.keys() & actual.keys():
            out += diff(expected[k], actual[k], f"{path}.{k}")
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path}: length {len(actual)} != {len(expected)}"]
        return [d for i, (e, a) in enumerate(zip(expected, actual)) for d in diff(e, a, f"{path}[{i}]")]
    if isinstance(expected, float) or isinstance(actual, float):
        if isinstance(expected, (int, float)) and isinstance(actual, (int, float)) and not (
            isinstance(expected, bool) or isinstance(actual, bool)
        ):
            if math.isclose(expected, actual, rel_tol=REL_TOL, abs_tol=0.0):
                return []
        return [f"{path}: {actual!r} != {expected!r} (rel tol {REL_TOL})"]
    if type(expected) is not type(actual) or expected != actual:
        return [f"{path}: {actual!r} != {expected!r}"]
    return []


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_golden_report(name):
    path = GOLDEN / f"{name}.report.json"
    actual = current_report(name)
    if os.environ.get("SOLAR_UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(actual, indent=2, sort_keys=True) + "\n")
        pytest.skip(f"regenerated {path.relative_to(ROOT)}")
    assert path.exists(), f"{path} is missing: run SOLAR_UPDATE_GOLDEN=1 pytest {__file__}"
    expected = json.loads(path.read_text())
    problems = diff(expected, actual)
    assert not problems, f"{name} differs from its golden report:\n" + "\n".join(problems[:40])


def test_every_golden_file_has_an_example():
    stale = sorted(p.name for p in GOLDEN.glob("*.report.json")
                   if p.name.removesuffix(".report.json") not in EXAMPLE_NAMES)
    assert not stale, f"golden files without an example: {stale}"


def test_the_comparison_can_fail():
    assert diff({"a": 1.0}, {"a": 1.0 + 1e-6}) != []
    assert diff({"a": 1.0}, {"a": 1.0 + 1e-12}) == []
    assert diff({"a": 1}, {"a": 2}) == ["$.a: 2 != 1"]
    assert diff({"a": [1]}, {"a": [1, 2]}) != []
    assert diff({"a": "x"}, {}) == ["$.a: missing"]
