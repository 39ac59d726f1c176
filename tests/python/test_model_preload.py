"""`solar server` imports the registry's model types' transformers modules once
(solar.models.preload, called by solar.programs.preload): a served `solar analyze hf:NAME`
then finds them imported instead of importing them in its child (docs/server.md)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("transformers")

from solar.models import registry  # noqa: E402

CHECK = """
import sys
from solar import programs
done = programs.preload()
print(done["transformers models"])
for t in sys.argv[1:]:
    print(t, any(m.startswith(f"transformers.models.{t}.modeling_") for m in sys.modules))
"""


def test_preload_imports_every_registry_model_type():
    types = sorted({e["config"]["model_type"] for e in registry.entries()
                    if isinstance(e.get("config"), dict) and "model_type" in e["config"]
                    and e["config"]["model_type"] in ("llama", "mixtral", "t5", "gpt2")})
    assert types  # the registry has Llama, Mixtral, T5 and GPT-2 entries
    done = subprocess.run([sys.executable, "-c", CHECK, *types], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "imported", lines[0]
    assert lines[1:] == [f"{t} True" for t in types]


def test_preload_reports_each_type():
    from solar.models import preload

    done = preload.registry_modules()
    assert done["llama"] == "imported"
    assert set(done.values()) == {"imported"}, done
