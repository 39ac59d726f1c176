"""Accepted translations, cached by content: the key is the digest of the source text, its
language, the model, the language-reference version (the digest of the fixed prompt), how it
is checked (validated or not, against which data) and the test-size limit. A failed
translation is not cached, so running again asks the model again.

Where: --cache-dir, else $SOLAR_CACHE_DIR/translate, else $XDG_CACHE_HOME/solar/translate,
else ~/.cache/solar/translate. One folder per key holding program.py and provenance.json,
written to a temporary folder first and renamed into place (a reader sees all or nothing).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from typing import Any, Dict, Optional, Tuple


def cache_root(explicit: Optional[str] = None) -> str:
    if explicit:
        return explicit
    if os.environ.get("SOLAR_CACHE_DIR"):
        return os.path.join(os.environ["SOLAR_CACHE_DIR"], "translate")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "solar", "translate")


def key(parts: Dict[str, Any]) -> str:
    """The cache key of a translation: the digest of its inputs (JSON, sorted keys)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


def _entry(root: str, k: str) -> str:
    return os.path.join(root, k[:2], k)


def lookup(root: str, k: str) -> Optional[Tuple[str, Dict[str, Any]]]:
    """(program text, provenance) of a cached translation, or None."""
    folder = _entry(root, k)
    try:
        with open(os.path.join(folder, "program.py"), encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(folder, "provenance.json"), encoding="utf-8") as f:
            provenance = json.load(f)
    except (OSError, ValueError):
        return None
    return text, provenance


def store(root: str, k: str, text: str, provenance: Dict[str, Any]) -> None:
    """Caches an accepted translation (an existing entry is replaced)."""
    folder = _entry(root, k)
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{k[:8]}.", dir=os.path.dirname(folder))
    try:
        with open(os.path.join(tmp, "program.py"), "w", encoding="utf-8") as f:
            f.write(text)
        with open(os.path.join(tmp, "provenance.json"), "w", encoding="utf-8") as f:
            json.dump(provenance, f, indent=1, allow_nan=False)
        if os.path.isdir(folder):
            shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
