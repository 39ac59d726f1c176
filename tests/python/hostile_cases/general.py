"""The commands' common front door: command names, options, graph files, saved traces,
devices and programs that raise (ids `general-`)."""

from __future__ import annotations

import json

from . import Case

GEMM = """\
a = bf16[64,32] input
b = bf16[32,16] weight
c = bf16[64,16]{output} einsum "mk,kn->mn" (a, b)
"""

RAISES = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        raise RuntimeError("this program is broken")

def get_inputs():
    return [torch.randn(4, 4)]

def get_init_inputs():
    return []
"""

TINY = """\
import torch
import torch.nn as nn

N = 8

class Model(nn.Module):
    def forward(self, x):
        return x.relu()

def get_inputs():
    return [torch.randn(N, N)]

def get_init_inputs():
    return []
"""

ASKS_STDIN = TINY.replace("return [torch.randn(N, N)]", "return [torch.randn(int(input()), 4)]")
EXITS = TINY.replace("return [torch.randn(N, N)]", "raise SystemExit(3)")
TRACE = json.dumps({"schema": "solar.optrace.v1", "tensors": [], "ops": []})


def _g(**more):
    return {"g.solar": GEMM, **more}


CASES = [
    Case("general-misspelt-command", ["anlyze", "g.solar"], "usage", "did you mean", files=_g()),
    Case("general-no-graph", ["analyze"], "usage", "solar"),
    Case("general-missing-graph", ["analyze", "nothing.solar"], "io", "nothing.solar"),
    Case("general-unknown-device", ["analyze", "g.solar", "--arch", "H900"], "unknown_device",
         "H900", files=_g()),
    Case("general-unknown-device-before-program", ["analyze", "p.py", "--arch", "H900"],
         "unknown_device", "H900", files={"p.py": TINY}),
    Case("general-bad-policy", ["analyze", "g.solar", "--policy", "fast"], "usage", "policy",
         files=_g()),
    Case("general-bad-cache-state", ["analyze", "g.solar", "--cache-state", "hot"], "usage",
         "cache", files=_g()),
    Case("general-negative-top", ["analyze", "g.solar", "--top", "-1"], "usage", "top",
         files=_g()),
    Case("general-bad-by", ["analyze", "g.solar", "--by", "colour"], "usage", "by", files=_g()),
    Case("general-bad-mode", ["analyze", "g.solar", "--mode", "exact"], "usage", "mode",
         files=_g()),
    Case("general-ski-slope-without-cache-aware",
         ["analyze", "g.solar", "--ski-slope", "s.svg", "--no-cache-aware"], "usage",
         "ski-slope", files=_g()),
    Case("general-json-into-missing-folder", ["analyze", "g.solar", "--json", "no/r.json"],
         "io", "no/r.json", files=_g()),
    Case("general-blank-graph", ["analyze", "blank.solar"], "parse", "blank.solar",
         files={"blank.solar": "\n\n   \n"}),
    Case("general-only-declarations", ["analyze", "d.solar"], "invalid_graph", "d.solar",
         files={"d.solar": "a = f32[4] input\n"}),
    Case("general-text-syntax-error", ["analyze", "bad.solar"], "parse", "bad.solar:2",
         files={"bad.solar": "a = f32[4] input\nb = f32[4 einsum\n"}),
    Case("general-binary-graph", ["analyze", "bin.solar"], "parse", "bin.solar",
         files={"bin.solar": bytes(range(256)) * 4}),
    Case("general-rank-mismatch", ["analyze", "r.solar"], "invalid_graph", "r.solar:2",
         files={"r.solar": "a = f32[4,4] input\n"
                           "b = f32[4]{output} einsum [i=4] none $0 (a[i]) -> [i]\n"}),
    Case("general-extent-overflow", ["analyze", "o.solar"], "parse", "o.solar",
         files={"o.solar": "a = f32[99999999999999999999999] input\n"}),
    Case("general-garbage-json", ["analyze", "g.json"], "parse", "g.json",
         files={"g.json": "{\"schema\": \"solar.graph.v1\", \"tensors\": [ 1, 2,"}),
    Case("general-json-wrong-schema", ["analyze", "g.json"], "parse", "schema",
         files={"g.json": json.dumps({"schema": "solar.graph.v0", "tensors": [], "ops": []})}),
    Case("general-truncated-trace", ["analyze", "trace.json"], "parse", "trace.json",
         files={"trace.json": TRACE[: len(TRACE) // 2]}),
    Case("general-program-raises", ["analyze", "p.py"], "program_error", "p.py:6",
         files={"p.py": RAISES}),
    Case("general-program-raises-json-stdout", ["analyze", "p.py", "--json", "-"],
         "program_error", "this program is broken", files={"p.py": RAISES}),
    Case("general-program-reads-closed-stdin", ["analyze", "p.py"], "program_error",
         "EOFError", files={"p.py": ASKS_STDIN}, stdin=""),
    Case("general-program-exits", ["analyze", "p.py"], "program_error", "SystemExit",
         files={"p.py": EXITS}),
    Case("general-set-unknown-constant", ["analyze", "p.py", "--set", "NOPE=3"], "usage",
         "NOPE", files={"p.py": TINY}),
    Case("general-set-without-value", ["analyze", "p.py", "--set", "N"], "usage", "N",
         files={"p.py": TINY}),
    Case("general-optimizer-without-train", ["analyze", "p.py", "--optimizer", "adam"],
         "usage", "--train", files={"p.py": TINY}),
    Case("general-shrink-zero", ["analyze", "p.py", "--shrink", "0"], "usage", "--shrink",
         files={"p.py": TINY}),
    Case("general-validate-a-graph", ["validate", "g.solar"], "usage", "g.solar", files=_g()),
    Case("general-inverse-without-target", ["inverse", "g.solar"], "usage", "target",
         files=_g()),
    Case("general-inverse-negative-target", ["inverse", "g.solar", "--target-ms", "-1"],
         "usage", "--target-ms", files=_g()),
    Case("general-inverse-two-targets",
         ["inverse", "g.solar", "--target-ms", "1", "--rate-hz", "5"], "usage", "target",
         files=_g()),
    Case("general-arch-show-unknown", ["arch", "show", "H900"], "unknown_device", "H900"),
    Case("general-export-unknown-format", ["export", "g.solar", "--format", "onnx", "--out",
                                           "e"], "usage", "onnx", files=_g()),
    Case("general-export-without-out", ["export", "g.solar", "--format", "accelforge"],
         "usage", "--out", files=_g()),
    Case("general-suite-missing-folder", ["suite", "nowhere"], "io", "nowhere"),
    # solar translate's outputs, checked before any model is asked
    Case("general-translate-out-is-the-source", ["translate", "p.py", "--out", "p.py"], "io",
         "--out would replace the input SOURCE", files={"p.py": TINY}),
    Case("general-translate-json-is-the-source", ["translate", "p.py", "--json", "p.py"], "io",
         "--json would replace the input SOURCE", files={"p.py": TINY}),
    Case("general-translate-out-is-the-source-folder", ["translate", "k", "--out", "./k/"], "io",
         "--out is the source folder", files={"k/p.py": TINY}),
    Case("general-translate-json-is-a-folders-source", ["translate", "k", "--json", "k/p.py"],
         "io", "--json would replace the input SOURCE", files={"k/p.py": TINY}),
    Case("general-translate-out-and-json-alike",
         ["translate", "p.py", "--out", "q.py", "--json", "q.py"], "io", "same file",
         files={"p.py": TINY}),
]
