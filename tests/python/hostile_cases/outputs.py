"""Output files: an output that would replace an input or another output, a read-only or
odd output, a folder an export may not fill. Each is refused before any work, with nothing
written (docs/cli.md, "Output files"; docs/export.md, "Writing into a folder")."""

from __future__ import annotations

import os
from pathlib import Path

from hostile_cases import Case

GRAPH = """graph g
a = f32[64,32] input
b = f32[32,16] weight
c = f32[64,16]{output} einsum "mk,kn->mn" (a, b)
"""
# A program that must never be captured: the refusals come first.
PROGRAM = """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        raise SystemExit("captured")
def get_inputs():
    return [torch.randn(2)]
"""
LOOP = """from solar.loopir import kernel, f32
@kernel
def k(a: f32[4], b: f32[4]):
    for i in range(4):
        b[i] = a[i]
"""
MANIFEST_OUTSIDE = '{"schema": "solar.export.v1", "files": ["../g.solar"]}'


def _hard_link(to: str, name: str):
    def setup(folder: Path) -> None:
        os.link(folder / to, folder / name)
    return setup


def _symlink(to: str, name: str):
    def setup(folder: Path) -> None:
        os.symlink(to, folder / name)
    return setup


def _read_only(name: str):
    def setup(folder: Path) -> None:
        (folder / name).chmod(0o444)
    return setup


G = {"g.solar": GRAPH}
P = {"p.py": PROGRAM}
REPLACES = "would replace the input"

CASES = [
    # An output that names an input: the graph, the program, a --reference, a suite's program,
    # --timings; by the same path, a hard link or a symlink.
    Case("outputs-graph-json-is-the-graph", ["analyze", "g.solar", "--json", "g.solar"], "io",
         "cannot write 'g.solar': --json would replace the input GRAPH", files=G),
    Case("outputs-graph-ski-slope-is-the-graph", ["analyze", "g.solar", "--ski-slope", "g.solar"],
         "io", "--ski-slope would replace the input GRAPH", files=G),
    Case("outputs-graph-html-is-the-graph", ["analyze", "g.solar", "--html", "g.solar"], "io",
         "--html would replace the input GRAPH", files=G),
    Case("outputs-graph-json-is-a-hard-link-of-the-graph",
         ["analyze", "g.solar", "--json", "h.solar"], "io",
         "--json would replace the input GRAPH 'g.solar' (the same file)", files=G,
         setup=_hard_link("g.solar", "h.solar")),
    Case("outputs-graph-json-is-a-symlink-to-the-graph",
         ["analyze", "g.solar", "--json", "link.json"], "io", "(the same file)", files=G,
         setup=_symlink("g.solar", "link.json")),
    Case("outputs-graph-json-is-the-graph-by-another-path",
         ["analyze", "g.solar", "--json", "sub/../g.solar"], "io", REPLACES,
         files={**G, "sub/keep": ""}),
    Case("outputs-inverse-json-is-the-graph",
         ["inverse", "g.solar", "--target-ms", "1", "--json", "g.solar"], "io", REPLACES, files=G),
    Case("outputs-program-json-is-the-program", ["analyze", "p.py", "--json", "p.py"], "io",
         "--json would replace the input PROGRAM", files=P),
    Case("outputs-program-html-is-the-program", ["analyze", "p.py", "--html", "p.py"], "io",
         "--html would replace the input PROGRAM", files=P),
    Case("outputs-program-save-trace-is-the-program",
         ["analyze", "p.py", "--save-trace", "p.py"], "io", "--save-trace would replace", files=P),
    Case("outputs-program-ski-slope-is-a-hard-link-of-the-program",
         ["analyze", "p.py", "--ski-slope", "q.py"], "io", "(the same file)", files=P,
         setup=_hard_link("p.py", "q.py")),
    Case("outputs-validate-json-is-the-reference",
         ["validate", "k.py", "--reference", "ref.py", "--json", "ref.py"], "io",
         "--json would replace the input --reference", files={"k.py": LOOP, "ref.py": PROGRAM}),
    Case("outputs-inverse-program-json-is-the-program",
         ["inverse", "p.py", "--target-ms", "1", "--json", "p.py"], "io", REPLACES, files=P),
    Case("outputs-bench-json-is-the-program", ["bench", "p.py", "--json", "p.py"], "io",
         "--json would replace the input PROGRAM", files=P),
    Case("outputs-suite-json-is-a-program-of-the-suite",
         ["suite", "progs", "--json", "progs/a.py"], "io",
         "cannot write 'progs/a.py': --json would replace the input PROGRAM",
         files={"progs/a.py": PROGRAM}),
    Case("outputs-suite-csv-is-a-file-the-suite-reads",
         ["suite", "progs", "--csv", "progs/notes.py"], "io", REPLACES,
         files={"progs/a.py": PROGRAM, "progs/notes.py": "# not a program\n"}),
    Case("outputs-suite-html-is-the-timings",
         ["suite", "progs", "--timings", "t.json", "--html", "t.json"], "io",
         "--html would replace the input --timings", files={"progs/a.py": PROGRAM, "t.json": "{}"}),
    # Two outputs on one file.
    Case("outputs-graph-json-and-html-are-one-file",
         ["analyze", "g.solar", "--json", "r.out", "--html", "r.out"], "io",
         "--json and --html name the same file", files=G),
    Case("outputs-graph-json-and-ski-slope-are-one-file",
         ["analyze", "g.solar", "--json", "r.out", "--ski-slope", "./r.out"], "io",
         "--json and --ski-slope name the same file", files=G),
    Case("outputs-program-json-and-save-trace-are-one-file",
         ["analyze", "p.py", "--json", "r.json", "--save-trace", "r.json"], "io",
         "--json and --save-trace name the same file", files=P),
    Case("outputs-suite-json-and-csv-are-one-file",
         ["suite", "progs", "--json", "r.out", "--csv", "r.out"], "io",
         "--json and --csv name the same file", files={"progs/a.py": PROGRAM}),
    # Read-only outputs (refused whoever runs the command), folders, devices.
    Case("outputs-graph-json-read-only", ["analyze", "g.solar", "--json", "r.json"], "io",
         "cannot write 'r.json': the file is read-only (mode 0444)",
         files={**G, "r.json": "earlier\n"}, setup=_read_only("r.json")),
    Case("outputs-graph-html-read-only", ["analyze", "g.solar", "--html", "r.html"], "io",
         "the file is read-only", files={**G, "r.html": "earlier\n"}, setup=_read_only("r.html")),
    Case("outputs-program-json-read-only", ["analyze", "p.py", "--json", "r.json"], "io",
         "the file is read-only", files={**P, "r.json": "earlier\n"}, setup=_read_only("r.json")),
    Case("outputs-suite-csv-read-only", ["suite", "progs", "--csv", "r.csv"], "io",
         "the file is read-only", files={"progs/a.py": PROGRAM, "r.csv": "earlier\n"},
         setup=_read_only("r.csv")),
    Case("outputs-graph-json-is-a-folder", ["analyze", "g.solar", "--json", "sub"], "io",
         "cannot write 'sub': it is a folder", files={**G, "sub/keep": ""}),
    Case("outputs-graph-json-is-a-device", ["analyze", "g.solar", "--json", "/dev/null"], "io",
         "it is not a regular file", files=G),
    Case("outputs-graph-json-in-a-missing-folder", ["analyze", "g.solar", "--json", "no/r.json"],
         "io", "folder 'no' does not exist", files=G),
    # Export folders: only a new, empty or earlier export's folder is filled.
    Case("outputs-export-into-a-folder-of-the-users",
         ["export", "g.solar", "--format", "accelforge", "--out", "out"], "io",
         "the folder is not empty and holds no Solar export",
         files={**G, "out/thesis.tex": "years of work\n"}),
    Case("outputs-export-program-into-a-folder-of-the-users",
         ["export", "p.py", "--format", "timeloop", "--out", "."], "io",
         "the folder is not empty and holds no Solar export", files=P),
    Case("outputs-export-with-a-foreign-manifest",
         ["export", "g.solar", "--format", "accelforge", "--out", "out"], "io",
         "is not a Solar export manifest",
         files={**G, "out/solar-export.json": '{"schema": "someone.else.v3", "files": []}'}),
    Case("outputs-export-with-a-manifest-that-is-not-json",
         ["export", "g.solar", "--format", "timeloop", "--out", "out"], "io",
         "is not a Solar export manifest (not a JSON object)",
         files={**G, "out/solar-export.json": "{ cut sh"}),
    Case("outputs-export-with-a-manifest-that-leads-outside",
         ["export", "g.solar", "--format", "accelforge", "--out", "out"], "io",
         "lists '../g.solar', which is not a file inside the folder",
         files={**G, "out/solar-export.json": MANIFEST_OUTSIDE}),
    Case("outputs-export-out-is-the-graph",
         ["export", "g.solar", "--format", "accelforge", "--out", "g.solar"], "io",
         "it exists and is not a folder", files=G),
    Case("outputs-export-out-in-a-missing-folder",
         ["export", "g.solar", "--format", "accelforge", "--out", "no/out"], "io",
         "folder 'no' does not exist", files=G),
]
