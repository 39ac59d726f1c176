"""A loop program's provenance file (PROG.provenance.json beside PROG.py, written by `solar
translate`): every report of a translated program carries it (section `translation`), and an
unvalidated translation, or one whose work is far from the capture's, says so
(docs/translate.md)."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional


def provenance_of(program: str) -> Optional[Dict[str, Any]]:
    """The provenance beside a program, or None."""
    path = os.path.splitext(program)[0] + ".provenance.json"
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == "solar.translation.v1" \
        else None


def unvalidated_note(program: str) -> Optional[str]:
    """One line when `program` is an unvalidated translation, else None."""
    p = provenance_of(program)
    if not p or p.get("status") != "unvalidated":
        return None
    return (f"{program} is an UNVALIDATED translation of {p.get('source', {}).get('path')} by "
            f"{p.get('model')} (solar translate --unvalidated): its outputs were never compared "
            "with the source's")


def translation_notes(program: str) -> List[str]:
    """The lines every report of a translated program adds on stderr: that it is unvalidated,
    and the warnings of its provenance (a capture check 2x or more off, docs/translate.md)."""
    p = provenance_of(program)
    if not p:
        return []
    note = unvalidated_note(program)
    return ([note] if note else []) + [f"{program} (translated by {p.get('model')}): {w}"
                                       for w in p.get("warnings", []) if isinstance(w, str)]
