"""GraphBuilder: build an EinsumGraph from Python, one statement of the text form at a time.

    b = solar.GraphBuilder("mlp")
    x = b.input("x", "bf16", [8, 1024])
    w = b.weight("w", "bf16", [1024, 4096])
    h = b.einsum("h", "bf16", [8, 4096], "bk,kn->bn", [x, w])
    b.einsum("y", "bf16", [8, 4096], "[b=8,n=4096] none relu($0)", [f"{h}[b,n]"],
             out="[b,n]", output=True)
    g = b.build()           # parsed and verified by the C++ parser

The builder only writes text (docs/ir-text.md); all checking is the parser's and the
verifier's, so errors name the statement's line in `b.text()`.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Sequence

from . import _core

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_SHORTHAND = re.compile(r"^[A-Za-z]*(,[A-Za-z]*)*->[A-Za-z]*$")


def _check_name(name: str) -> str:
    if not _NAME.match(name):
        raise _core.UserError(f"invalid name {name!r}: use letters, digits, '_' and '.'")
    return name


def _type(dtype: str, shape: Sequence[int], annotations: Sequence[str]) -> str:
    dims = ",".join(str(int(d)) for d in shape)
    ann = "{" + ", ".join(annotations) + "}" if annotations else ""
    return f"{dtype}[{dims}]{ann}"


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class GraphBuilder:
    """Accumulates text-form statements; build() parses and verifies them."""

    def __init__(self, name: str = "graph"):
        self._lines = [f"graph {_check_name(name)}"]

    # ---- source tensors --------------------------------------------------------------
    def add_tensor(
        self,
        name: str,
        dtype: str,
        shape: Sequence[int],
        role: str = "input",
        dims: Optional[Sequence[str]] = None,
        sparsity: Optional[str] = None,
    ) -> str:
        """A graph input, weight or constant. dims names each dimension ("B", "S", ...);
        sparsity is "2:4" or a zero fraction such as 0.3. Returns the name."""
        if role not in ("input", "weight", "constant"):
            raise _core.UserError(f"role {role!r}: sources are input, weight or constant")
        ann = []
        if dims:
            ann.append(f"dims={_quote(','.join(dims))}")
        if sparsity is not None:
            ann.append(f"sparsity={_quote(sparsity)}" if isinstance(sparsity, str) else f"zeros={float(sparsity)!r}")
        self._lines.append(f"{_check_name(name)} = {_type(dtype, shape, ann)} {role}")
        return name

    def input(self, name: str, dtype: str, shape: Sequence[int], **kw) -> str:
        return self.add_tensor(name, dtype, shape, "input", **kw)

    def weight(self, name: str, dtype: str, shape: Sequence[int], **kw) -> str:
        return self.add_tensor(name, dtype, shape, "weight", **kw)

    # ---- ops -------------------------------------------------------------------------
    def add_einsum(
        self,
        name: str,
        dtype: str,
        shape: Sequence[int],
        spec: str,
        inputs: Iterable[str],
        out: Optional[str] = None,
        where: Optional[str] = None,
        output: bool = False,
    ) -> str:
        """An einsum producing tensor `name`.

        Shorthand: spec "mk,kn->mn" and plain tensor names as inputs (product of the
        operands, summed over the missing letters). Full form: spec "[i=..,..] REDUCE
        COMBINE", inputs as subscripted operands ("x[b,p+r-1] pad 0"), out "[b,p]" and an
        optional mask `where` ("i >= j"). output=True marks a graph output."""
        ins = ", ".join(inputs)
        ann = ["output"] if output else []
        head = f"{_check_name(name)} = {_type(dtype, shape, ann)} einsum"
        if _SHORTHAND.match(spec.replace(" ", "")):
            if out is not None or where is not None:
                raise _core.UserError("shorthand einsums take no `out` or `where`; use the full form")
            self._lines.append(f"{head} {_quote(spec.replace(' ', ''))} ({ins})")
        else:
            if out is None:
                raise _core.UserError(f"full-form einsum {name!r} needs `out`, e.g. out='[b,n]'")
            line = f"{head} {spec} ({ins}) -> {out}"
            if where:
                line += f" where {where}"
            self._lines.append(line)
        return name

    einsum = add_einsum

    def add_statement(self, line: str) -> None:
        """Any statement of the text form (move, opaque, unanalyzed ops...), verbatim."""
        self._lines.append(line)

    # ---- result ----------------------------------------------------------------------
    def text(self) -> str:
        """The text form written so far."""
        return "\n".join(self._lines) + "\n"

    def build(self) -> "_core.Graph":
        """Parses and verifies the statements (solar.UserError names the failing line)."""
        return _core.parse_graph(self.text(), "<GraphBuilder>")
