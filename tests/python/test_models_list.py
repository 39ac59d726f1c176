"""`solar models list [--json]` (python/solar/models/listing.py, docs/cli.md): the registry as a
table and as one JSON document, read from the registry files without importing torch."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import run_solar
from solar import models
from solar.models import listing


def solar(*args):
    return run_solar(*args)


def test_the_table_has_a_row_per_registry_model_with_its_hub_id_and_source():
    r = solar("models", "list")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["name", "task", "model_type", "params", "layers", "hub", "id",
                                "source"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert sorted(rows) == sorted(models.names())
    for entry in models.entries():
        row = rows[entry["name"]].split()
        assert row[1] == entry["task"] and row[2] == entry["config"]["model_type"]
        # the source is the last column, as written (a policy's names several files)
        assert rows[entry["name"]].endswith("  " + entry["source"])
        assert entry["hf_id"] in row
    # exact counts with every digit, rounded ones as the source rounds them
    assert rows["llama-3.1-8b"].split()[3] == f"{8030261248:,}"
    assert rows["deepseek-v3"].split()[3] == "671B"
    assert rows["deepseek-v3"].split()[4] == "61"  # num_hidden_layers
    assert rows["t5-small"].split()[4] == str(6 + 6)  # encoder + decoder layers


def test_json_is_one_document_with_the_registry_values():
    r = solar("models", "list", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "solar.models.v1"
    by_name = {m["name"]: m for m in doc["models"]}
    assert sorted(by_name) == sorted(models.names())
    for entry in models.entries():
        m = by_name[entry["name"]]
        assert m["params_published"] == entry["published"]["params"]
        assert m["params_exact"] == entry["published"]["exact"]
        assert m["hub_id"] == entry["hf_id"] and m["source"] == entry["source"]
    assert isinstance(by_name["deepseek-v3"]["params_published"], int)


def test_published_counts_are_written_as_their_source_gives_them():
    assert listing.published_text({"params": 7241732096, "exact": True}) == "7,241,732,096"
    assert listing.published_text({"params": 15.7e9, "exact": False}) == "15.7B"
    assert listing.published_text({"params": 129e6, "exact": False}) == "129M"


def test_listing_imports_neither_torch_nor_transformers():
    code = ("import sys; from solar.models import listing; listing.rows(); "
            "print('torch' in sys.modules or 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def test_a_missing_or_unknown_action_is_a_usage_error():
    for args, words in ((["models"], "ACTION"), (["models", "lst"], "did you mean 'list'")):
        r = solar(*args)
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr
        assert r.stderr.startswith("solar: error: ")
    r = solar("model")
    assert r.returncode == 2 and "solar models" in r.stderr


def test_solar_help_lists_the_command():
    r = solar("--help")
    assert r.returncode == 0 and "models list" in r.stdout
