"""The HTML report's content: every section, every number equal to the report JSON's
(data-value beside data-field), a well-formed self-contained page that loads nothing, the
chart data (each op under its device's roofline), the CLI's --html on graphs, programs,
inverse and suite (atomic, the exit codes of other outputs), and Report._repr_html_.
The browser test is test_html_browser.py."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from conftest import EXAMPLES, GOLDEN, run_solar

import solar
import solar.html
from solar import _core, headroom
from solar.suite.outputs import SUITE_SCHEMA, summarize
from solar.html import charts
from solar.html.fmt import exact

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
# SVG elements the page writes self-closed (<circle .../>).
SELF_CLOSED_OK = {"circle", "line", "rect", "polyline", "path"}


class Page(HTMLParser):
    """What the tests read from a page: ids, data-field/data-value pairs, URLs in attributes,
    scripts, nesting errors, the module tree's <details> depth per path."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.ids, self.fields = [], [], [], {}
        self.urls, self.scripts, self.tags = [], [], []
        self.module_depth, self._script = {}, None
        self.feed(text)
        self.close()
        if self.stack:
            self.errors.append(f"unclosed: {self.stack}")

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids.append(a["id"])
        if "data-field" in a:
            assert a["data-field"] not in self.fields, f"field twice: {a['data-field']}"
            self.fields[a["data-field"]] = a["data-value"]
        for k in ("src", "href", "action", "data", "poster"):
            if a.get(k):
                self.urls.append(a[k])
        if tag in ("details", "div") and "module" in (a.get("class") or "").split():
            depth = sum(1 for t, c in self.stack if t == "details" and "module" in c)
            self.module_depth[a["data-path"]] = depth
        if tag == "script":
            self._script = []
        if tag not in VOID:
            self.stack.append((tag, a.get("class") or ""))

    def handle_startendtag(self, tag, attrs):
        if tag not in VOID and tag not in SELF_CLOSED_OK:
            self.errors.append(f"self-closed <{tag}/>")
        self.tags.append(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        if tag == "script":
            self.scripts.append("".join(self._script))
            self._script = None

    def handle_data(self, data):
        if self._script is not None:
            self._script.append(data)


def resolve(doc: dict, field: str):
    """The value at a data-field path: dots between keys, `ops[NAME]` an op by name,
    `modules[PATH]` a module node by path, digits index lists."""
    m = re.match(r"^ops\[(.*?)\]\.(.*)$", field)
    if m:
        node = next(o for o in doc["ops"] if o["name"] == m.group(1))
        rest = m.group(2)
    else:
        m = re.match(r"^modules\[(.*?)\]\.(.*)$", field)
        if m:
            node, rest = find_module(doc["modules"], m.group(1)), m.group(2)
        else:
            node, rest = doc, field
    for key in rest.split("."):
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


def find_module(node: dict, path: str) -> dict:
    if node["path"] == path:
        return node
    for c in node.get("children", []):
        if path == c["path"] or path.startswith(c["path"] + "."):
            return find_module(c, path)
    raise KeyError(path)


def check_numbers(page: Page, doc: dict) -> None:
    assert page.fields, "no numbers carry their value"
    for field, value in page.fields.items():
        if field == "summary.failures":
            continue  # a sum the page computes: checked by its test
        assert value == exact(resolve(doc, field)), field


def check_self_contained(text: str, page: Page) -> None:
    assert page.urls == [] or all(u.startswith("#") for u in page.urls), page.urls
    assert "<link" not in text and "@import" not in text
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", text)
    assert not re.search(r"<script[^>]*\bsrc=", text)


@pytest.fixture(scope="module")
def block():
    """A real analysis: the transformer block on two devices (cache-aware level, ski-slope,
    fusion groups)."""
    r = solar.analyze(EXAMPLES / "transformer_block.solar", arch=["H100_SXM", "B200"])
    return r, json.loads(r.to_json(None))


def test_every_section_and_chart_is_there(block):
    report, doc = block
    text = solar.html.render(report)
    page = Page(text)
    assert page.errors == []
    for section in ("summary", "devices", "roofline", "ski-slope", "fusion-groups", "insights",
                    "modules", "top-ops"):
        assert section in page.ids, section
    assert "headroom" not in page.ids  # no measurement, no scatter
    charts_ = [i for i in page.ids if i.startswith("chart-")]
    assert charts_ == [f"chart-roofline-{d}" for d in doc["devices"]] + ["chart-ski-slope"]
    assert page.tags.count("svg") == len(charts_)  # a static SVG for every chart
    assert "1 MAC = 2 FLOP" in text
    assert len(set(page.ids)) == len(page.ids)  # ids unique
    assert [t for t in page.tags if t in ("html", "head", "body")] == ["html", "head", "body"]
    check_self_contained(text, page)


def test_numbers_in_the_page_are_the_report_json(block):
    report, doc = block
    page = Page(solar.html.render(doc, interactive=False))
    check_numbers(page, doc)
    for key in ("macs", "flops", "vector_flops", "special_ops", "bytes_unfused", "bytes_fused"):
        assert page.fields[f"totals.{key}"] == str(doc["totals"][key])
    for d in doc["devices"]:
        for level in ("unfused", "framework", "fused", "cache_aware"):
            assert f"devices.{d}.{level}.seconds" in page.fields
        groups = doc["devices"][d]["cache_aware"]["groups"]
        assert sum(f.startswith(f"devices.{d}.cache_aware.groups.") and f.endswith(".traffic_bytes")
                   for f in page.fields) == len(groups) > 0
    # FLOPs = 2 x MACs + vector FLOPs, as the page says
    t = doc["totals"]
    assert int(page.fields["totals.flops"]) == 2 * t["macs"] + t["vector_flops"]


def test_interactive_charts_inline_plotly(block):
    pytest.importorskip("plotly", reason="plotly is installed by scripts/setup")
    report, doc = block
    text = solar.html.render(report)
    page = Page(text)
    big = [s for s in page.scripts if len(s) > 1_000_000]
    assert len(big) == 1  # plotly.js once, inline
    assert text.count('class="plotly-graph-div"') == len(doc["devices"]) + 1
    check_self_contained(text, page)


def test_static_page_has_no_script_and_is_small(block):
    report, doc = block
    text = solar.html.render(report, interactive=False)
    page = Page(text)
    assert page.scripts == [] and page.errors == []
    assert len(text) < 300_000
    assert page.tags.count("svg") == len(doc["devices"]) + 1


def test_each_op_sits_under_its_device_roofline(block):
    _, doc = block
    for d, dev in doc["devices"].items():
        chart = charts.op_roofline(doc, d)
        placed = {n: (x, y) for s in chart["series"] if s["mode"] == "markers"
                  for n, x, y in zip(s["text"], s["x"], s["y"])}
        ops = {o["name"]: o for o in doc["ops"]
               if o["analyzed"] and o["flops"] > 0 and o["bytes"] > 0}
        assert set(placed) == set(ops)
        bw = dev["dram_bandwidth"]
        roofs, _ = charts.compute_roofs(dev["peaks_used"])
        for name, (x, y) in placed.items():
            o = ops[name]
            assert x == o["flops"] / o["bytes"] and y == o["flops"] / o["seconds"][d]
            # The SOL never beats the roofline: below the DRAM slope and the top roof ...
            assert y <= bw * x * (1 + 1e-9) and y <= max(roofs.values()) * (1 + 1e-9)
            # ... and a DRAM-bound op sits on the slope.
            if o["bottleneck"][d] == "dram":
                assert y == pytest.approx(bw * x, rel=1e-9)
        # the roofs are the device's own peaks (FLOP-rate routes)
        for s in chart["series"]:
            if s["mode"] == "lines" and not s["name"].startswith("DRAM"):
                assert s["y"][0] == roofs[s["name"].split(" ")[0]]


def test_ski_slope_chart_is_the_reports_curve(block):
    _, doc = block
    chart = charts.ski_slope(doc)
    by_name = {s["name"]: s for s in chart["series"]}
    ss = doc["ski_slope"]
    assert by_name["attainable Q(S)"]["x"] == ss["capacities_bytes"]
    assert by_name["attainable Q(S)"]["y"] == ss["attainable_bytes"]
    assert by_name["provable Q(S)"]["y"] == ss["provable_bytes"]
    assert sorted(v["x"] for v in chart["vlines"]) == sorted(ss["device_capacities_bytes"].values())
    lo, hi = chart["x_range"]
    assert all(lo < v["x"] < hi for v in chart["vlines"])  # every device's line is drawn


def tree_from_ops(doc: dict) -> dict:
    """A module tree in the agreed format (docs/report-json.md `modules`) from a report
    without one: ops grouped by the first part of their names (`ln1_sum` -> `ln1`), sums of
    their real counts and seconds. Used until the frontends' tree is in every report."""
    devs = list(doc["devices"])
    total = {d: doc["devices"][d]["unfused"]["seconds"] for d in devs}

    def node(path, name, ops, children):
        unf = {d: sum(o["seconds"][d] for o in ops) for d in devs}
        return {"path": path, "name": name, "type": "Block" if path else "", "ops": len(ops),
                "macs": sum(o["macs"] for o in ops), "flops": sum(o["flops"] for o in ops),
                "bytes_unfused": sum(o["bytes"] for o in ops),
                "bytes_fused": sum(o["bytes"] for o in ops),
                "devices": {d: {"unfused_seconds": unf[d], "fused_seconds": unf[d],
                                "share": unf[d] / total[d]} for d in devs},
                "children": children}

    groups: dict = {}
    for o in doc["ops"]:
        groups.setdefault(o["name"].split("_")[0], []).append(o)
    children = [node(f"block.{g}", g, ops, []) for g, ops in groups.items()]
    block = node("block", "block", doc["ops"], children)
    return node("", "", doc["ops"], [block])


def test_module_tree_is_collapsible_and_exact(block):
    _, doc = block
    doc = dict(doc)
    if "modules" not in doc:
        doc["modules"] = tree_from_ops(doc)
    page = Page(solar.html.render(doc, interactive=False))
    assert page.errors == []
    check_numbers(page, doc)

    def walk(n, depth):
        yield n, depth
        for c in n.get("children", []):
            yield from walk(c, depth + 1)

    nodes = list(walk(doc["modules"], 0))
    assert {n["path"] for n, _ in nodes} == set(page.module_depth)
    for n, depth in nodes:
        assert page.module_depth[n["path"]] == depth  # nested as in the tree
        assert page.fields[f"modules[{n['path']}].macs"] == exact(n["macs"])
        for d, v in n["devices"].items():
            assert page.fields[f"modules[{n['path']}].devices.{d}.share"] == exact(v["share"])


def test_a_report_without_modules_says_so(block):
    _, doc = block
    doc = {k: v for k, v in doc.items() if k != "modules"}
    text = solar.html.render(doc, interactive=False)
    assert "has no module tree" in text


def test_insights_rows_are_the_reassociation_entries():
    b = solar.GraphBuilder("chain")
    b.input("x", "bf16", [16, 4096])
    b.weight("w1", "bf16", [4096, 4096])
    b.weight("w2", "bf16", [4096, 64])
    b.input("y", "bf16", [64, 4096])
    b.add_einsum("t", "bf16", [16, 4096], "mk,kn->mn", ["x", "w1"])
    b.add_einsum("u", "bf16", [16, 64], "mk,kn->mn", ["t", "w2"])
    b.add_einsum("v", "bf16", [16, 4096], "mk,kn->mn", ["u", "y"], output=True)
    doc = json.loads(solar.analyze(b.build(), arch="H100_SXM").to_json(None))
    entries = doc["insights"]["reassociation"]
    assert entries  # x @ (w1 @ w2) is cheaper than as written
    text = solar.html.render(doc, interactive=False)
    page = Page(text)
    check_numbers(page, doc)
    for i, e in enumerate(entries):
        assert page.fields[f"insights.reassociation.{i}.macs_least"] == exact(e["macs_least"])
        assert page.fields[f"insights.reassociation.{i}.macs_as_written"] == exact(e["macs_as_written"])
        assert e["expression"] in text


def test_repr_html_is_compact(block):
    report, doc = block
    fragment = report._repr_html_()
    page = Page(fragment)
    assert page.errors == [] and page.scripts == []
    assert {"summary", "devices"} <= set(page.ids)
    assert page.tags.count("svg") == 1  # the ski-slope
    assert len(fragment) < 100_000
    check_numbers(page, doc)
    # Its styles stay inside it: a notebook's own page is not restyled.
    style = fragment.split("<style>")[1].split("</style>")[0]
    for rule in style.split("}"):
        if rule.strip():
            for selector in rule.split("{")[0].split(","):
                assert selector.strip().startswith(".solar-report"), selector


def _suite_doc(tmp_path):
    """A suite document as `solar suite` makes it, from real analyses: two programs (their
    sources in a level1 folder, as KernelBench's), a failure, headroom joined with timings
    given for both (the test's input: 3x and 1.5x the fused SOL in ms)."""
    entries = []
    for name, arch in (("gemm", ["H100_SXM"]), ("transformer_block", ["H100_SXM"])):
        d = json.loads(solar.analyze(EXAMPLES / f"{name}.solar", arch=arch).to_json(None, ops=False))
        d["program"]["source"] = f"kb/level1/{name}.py"
        entries.append(d)
    entries.append({"program": {"source": "kb/level1/broken.py"},
                    "error": {"cause": "program_error", "message": "RuntimeError: boom"}})
    timings = {"level1": {f"{e['program']['name']}.py": {
        "min": k * e["devices"]["H100_SXM"]["fused"]["seconds"] * 1e3,
        "mean": k * e["devices"]["H100_SXM"]["fused"]["seconds"] * 1e3}
        for e, k in zip(entries[:2], (3.0, 1.5))}}
    summary = summarize(entries, [], 1.0)
    summary["headroom"] = headroom.join(entries, timings, "H100_SXM")
    return {"schema": SUITE_SCHEMA, "options": {"dir": "kb", "archs": ["H100_SXM"]},
            "programs": entries, "summary": summary}


def test_suite_page(tmp_path):
    doc = _suite_doc(tmp_path)
    text = solar.html.render(doc, interactive=False)
    page = Page(text)
    assert page.errors == []
    assert {"summary", "programs", "roofline", "headroom"} <= set(page.ids)
    check_numbers(page, doc)
    assert page.fields["summary.failures"] == "1"
    assert "failed: program_error" in text
    roof = charts.suite_roofline(doc, "H100_SXM")
    programs = [s for s in roof["series"] if s["mode"] == "markers" and s.get("symbol") != "x"]
    assert sum(len(s["x"]) for s in programs) == 2
    # the measured runs against the roof: the same FLOPs in 3x and 1.5x the fused SOL
    (measured,) = [s for s in roof["series"] if s.get("symbol") == "x"]
    at_sol = dict(zip(programs[0]["text"], programs[0]["y"]))
    assert sorted(at_sol[n] / y for n, y in zip(measured["text"], measured["y"])) == (
        pytest.approx([1.5, 3.0]))
    head = charts.headroom_suite(doc["summary"]["headroom"])
    pts = [(x, y) for s in head["series"] if s["mode"] == "markers" for x, y in zip(s["x"], s["y"])]
    fused = [e["devices"]["H100_SXM"]["fused"]["seconds"] for e in doc["programs"][:2]]
    assert sorted(y / x for x, y in pts) == pytest.approx([1.5, 3.0])
    assert sorted(x for x, _ in pts) == pytest.approx(sorted(fused))


def test_inverse_page():
    g = solar.load_graph(EXAMPLES / "gemm.solar")
    text, _ = _core.inverse(g, ["H100_SXM", "B200"], 1e-4, 2e12)
    doc = json.loads(text)
    html_text = solar.html.render(doc, interactive=False)
    page = Page(html_text)
    assert page.errors == []
    assert {"summary", "devices", "inverse-curve", "chart-inverse-curve"} <= set(page.ids)
    check_numbers(page, doc)
    for d in doc["devices"]:
        assert page.fields[f"devices.{d}.compute_factor"] == exact(doc["devices"][d]["compute_factor"])
    for d, v in doc["devices"].items():  # each device's status in its row
        row = html_text.split(f'data-field="devices.{d}.bandwidth_factor"')[1].split("</tr>")[0]
        assert (v.get("status") or ("meets" if v["meets"] else "falls short")) in row


def test_render_refuses_what_is_not_a_report():
    with pytest.raises(ValueError, match="not a Solar report"):
        solar.html.render({"schema": "something.else"})


# ------------------------------------------------------------------------- the command line


def test_cli_graph_html_beside_json(tmp_path):
    out, js = tmp_path / "r.html", tmp_path / "r.json"
    r = run_solar("analyze", "examples/gemm.solar", "--arch", "H100_SXM,B200",
                  "--html", str(out), "--json", str(js))
    assert r.returncode == 0, r.stderr
    assert "Solar SOL report: gemm" in r.stdout  # the table, as without --html
    doc = json.loads(js.read_text())
    page = Page(out.read_text())
    check_numbers(page, doc)
    assert page.fields["totals.macs"] == str(4096 * 4096 * 4096)  # M*N*K of examples/gemm
    assert oct(out.stat().st_mode & 0o777) != oct(0o600)  # readable like the JSON, not 0600
    assert [p.name for p in tmp_path.iterdir()] and not any(
        p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_cli_graph_html_with_json_on_stdout(tmp_path):
    out = tmp_path / "r.html"
    r = run_solar("analyze", "examples/gemm.solar", "--json", "-", "--html", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # stdout is exactly the JSON document
    check_numbers(Page(out.read_text()), doc)


def test_cli_html_errors_and_atomicity(tmp_path):
    missing = tmp_path / "no_such_dir" / "r.html"
    r = run_solar("analyze", "examples/gemm.solar", "--html", str(missing))
    assert r.returncode == _core.EXIT_CODES["io"]
    assert str(missing) in r.stderr and "output folder does not exist" in r.stderr
    r = run_solar("analyze", "examples/gemm.solar", "--html")
    assert r.returncode == _core.EXIT_CODES["usage"]
    # A failing analysis leaves an earlier page as it was, and no temporary file.
    bad = tmp_path / "bad.solar"
    bad.write_text("graph bad\nthis is not a graph\n")
    out = tmp_path / "r.html"
    out.write_text("earlier")
    r = run_solar("analyze", str(bad), "--html", str(out))
    assert r.returncode == _core.EXIT_CODES["parse"], r.stderr
    assert out.read_text() == "earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.solar", "r.html"]
    # an unknown device: the C++ CLI's code (6), no page
    r = run_solar("analyze", "examples/gemm.solar", "--arch", "NOPE", "--html", str(tmp_path / "n.html"))
    assert r.returncode == _core.EXIT_CODES["unknown_device"]
    assert not (tmp_path / "n.html").exists()


def test_cli_inverse_graph_html(tmp_path):
    out = tmp_path / "inv.html"
    r = run_solar("inverse", "examples/gemm.solar", "--target-ms", "0.1", "--arch", "H100_SXM",
                  "--html", str(out))
    assert r.returncode == 0, r.stderr
    assert "Solar inverse roofline" in r.stdout
    assert {"summary", "devices", "inverse-curve"} <= set(Page(out.read_text()).ids)


def test_cli_program_html(tmp_path):
    """A PyTorch program: captured, analyzed, the page written with its cross-check."""
    out, js = tmp_path / "mlp.html", tmp_path / "mlp.json"
    r = run_solar("analyze", "examples/torch/mlp.py", "--html", str(out), "--json", str(js))
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    text = out.read_text()
    page = Page(text)
    check_numbers(page, doc)
    assert "crosscheck" in text and {"summary", "roofline", "ski-slope"} <= set(page.ids)


def test_cli_program_html_folder_checked_before_capture(tmp_path):
    """The program raises when it is loaded (exit 9 once captured): a missing --html folder
    is found first (exit 3), so nothing ran."""
    prog = tmp_path / "boom.py"
    prog.write_text("raise RuntimeError('the program ran')\n")
    r = run_solar("analyze", str(prog), "--html", str(tmp_path / "nope" / "r.html"))
    assert r.returncode == _core.EXIT_CODES["io"], r.stderr
    assert "the program ran" not in r.stderr


def test_cli_suite_html_folder_checked_before_running(tmp_path):
    r = run_solar("suite", str(EXAMPLES / "loops"), "--html", str(tmp_path / "nope" / "s.html"))
    assert r.returncode == _core.EXIT_CODES["io"]
    assert "output folder does not exist" in r.stderr


def test_a_roofline_keeps_the_ops_with_the_most_time(block, monkeypatch):
    """Past MAX_POINTS ops (huge graphs) the chart keeps the heaviest ones and says so."""
    _, doc = block
    monkeypatch.setattr(charts, "MAX_POINTS", 5)
    d = next(iter(doc["devices"]))
    chart = charts.op_roofline(doc, d)
    names = {n for s in chart["series"] if s["mode"] == "markers" for n in s["text"]}
    ops = [o for o in doc["ops"] if o["analyzed"] and o["flops"] > 0 and o["bytes"] > 0]
    heaviest = sorted(ops, key=lambda o: -o["seconds"][d])[:5]
    assert names == {o["name"] for o in heaviest}
    assert f"The 5 ops with the most time of {len(ops)}" in chart["caption"]


def test_headroom_scatter_of_a_measured_run(tmp_path):
    """`solar bench`'s report (a real run here, with the profiler): the page has the
    headroom section, the program at (SOL, measured min) per level and every profiled op
    with both times at (its SOL, its measured time)."""
    from solar import bench

    result = bench.bench_file(str(EXAMPLES / "torch" / "mlp.py"),
                              bench.BenchOptions(trials=2, warmup=1, profile=True))
    doc = json.loads(result.report.to_json(None))
    m = doc["measurement"]
    page = Page(solar.html.render(doc, interactive=False))
    assert "headroom" in page.ids and "chart-headroom" in page.ids
    chart = charts.headroom_measurement(doc)
    series = {s["name"]: s for s in chart["series"]}
    prog = series["program (per SOL level)"]
    assert sorted(zip(prog["x"], prog["y"])) == sorted(
        (s, m["min_seconds"]) for s in m["sol_seconds"].values())
    ops = series["ops (profiler)"]
    timed = [r for r in m["per_op"] if r["sol_seconds"] and r["measured_seconds"]]
    assert timed and sorted(zip(ops["text"], ops["x"], ops["y"])) == sorted(
        (r["op"], r["sol_seconds"], r["measured_seconds"]) for r in timed)


def test_cli_graph_help_with_html_prints_help(tmp_path):
    r = run_solar("analyze", "examples/gemm.solar", "--html", str(tmp_path / "r.html"), "--help")
    assert r.returncode == 0 and "--json" in r.stdout
    assert not (tmp_path / "r.html").exists()


def test_a_program_that_does_not_fit_is_marked_in_its_device_row():
    """A 2 TB input (2^20 x 2^20 bf16) on an 80 GB H100: the row says it does not fit, with
    the footprint the JSON gives (devices.<ID>.memory)."""
    b = solar.GraphBuilder("huge")
    b.input("x", "bf16", [1 << 20, 1 << 20])
    b.add_einsum("y", "bf16", [1 << 20, 1 << 20], "ij->ij", ["x"], output=True)
    doc = json.loads(solar.analyze(b.build(), arch="H100_SXM", cache_aware=False).to_json(None))
    mem = doc["devices"]["H100_SXM"].get("memory")
    if mem is None:
        pytest.skip("this build's reports have no devices.<ID>.memory yet")
    assert mem["fits"] is False and int(mem["footprint_bytes"]) >= 2 * (1 << 40)
    text = solar.html.render(doc, interactive=False)
    page = Page(text)
    check_numbers(page, doc)
    assert page.fields["devices.H100_SXM.memory.footprint_bytes"] == exact(mem["footprint_bytes"])
    row = text.split('data-field="devices.H100_SXM.memory.footprint_bytes"')[0].rsplit("<td", 1)[1]
    assert 'class="warn">does not fit' in row


def test_module_tree_of_a_captured_gpt(tmp_path):
    """A real module tree (the PyTorch frontend's): the small GPT's blocks each a collapsible
    row nested as in the JSON, with its numbers."""
    from solar.programs import ProgramOptions, analyze_file

    result = analyze_file(str(EXAMPLES / "torch" / "gpt_block.py"),
                          ProgramOptions(crosscheck=False, cache_aware=False))
    doc = json.loads(result.report.to_json(None))
    if not (doc.get("modules") or {}).get("children"):
        pytest.skip("this build's reports carry no module tree yet")
    page = Page(solar.html.render(doc, interactive=False))
    assert page.errors == []
    check_numbers(page, doc)

    def walk(n, depth):
        yield n, depth
        for c in n.get("children", []):
            yield from walk(c, depth + 1)

    nodes = list(walk(doc["modules"], 0))
    assert {n["path"] for n, _ in nodes} == set(page.module_depth)
    assert all(page.module_depth[n["path"]] == d for n, d in nodes)
    assert {"blocks.0", "blocks.1"} <= set(page.module_depth)  # n_layers = 2


def test_cli_suite_html_with_timings(tmp_path):
    """`solar suite DIR --timings FILE --html PATH`: a loop GEMM in a level1 folder, its
    measured time (the test's input: 1 ms) joined: the page has its row, its point on the
    roofline and on the headroom scatter, numbers equal to the suite JSON's."""
    level = tmp_path / "kb" / "level1"
    level.mkdir(parents=True)
    (level / "gemm.py").write_text((EXAMPLES / "loops" / "gemm.py").read_text())
    timings = tmp_path / "timings.json"
    timings.write_text(json.dumps({"level1": {"gemm.py": {"min": 1.0, "mean": 1.1}}}))
    out, js = tmp_path / "suite.html", tmp_path / "suite.json"
    r = run_solar("suite", str(tmp_path / "kb"), "--arch", "H100_SXM", "--timings", str(timings),
                  "--html", str(out), "--json", str(js), "--quiet", "--no-crosscheck")
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    text = out.read_text()
    page = Page(text)
    assert page.errors == []
    check_numbers(page, doc)
    assert {"summary", "programs", "roofline", "headroom"} <= set(page.ids)
    assert page.fields["programs.0.totals.macs"] == str(512 * 1024 * 256)  # M*N*K
    head = charts.headroom_suite(doc["summary"]["headroom"])
    pts = [(x, y) for s in head["series"] if s["mode"] == "markers" for x, y in zip(s["x"], s["y"])]
    fused = doc["programs"][0]["devices"]["H100_SXM"]["fused"]["seconds"]
    assert pts == [(pytest.approx(fused), pytest.approx(1e-3))]


def test_without_the_cache_aware_level():
    """--no-cache-aware: no ski-slope and no fusion groups, each section says why; the
    devices table gives the reason in the cache-aware cells."""
    r = solar.analyze(EXAMPLES / "gemm.solar", arch="H100_SXM", cache_aware=False)
    doc = json.loads(r.to_json(None))
    text = solar.html.render(doc, interactive=False)
    page = Page(text)
    assert page.errors == []
    check_numbers(page, doc)
    assert "chart-ski-slope" not in page.ids and "No ski-slope" in text
    assert "No device has the cache-aware level" in text
    assert doc["devices"]["H100_SXM"]["cache_aware"]["reason"] in text
    assert r._repr_html_().count("<svg") == 0


@pytest.mark.parametrize("golden", sorted(p.name for p in GOLDEN.glob("*.report.json")))
def test_golden_reports_render_exactly(golden):
    """The golden reports (the C++ analysis's own JSON, tests/golden): every section, every
    number equal to the JSON's, the memory column where the JSON has devices.<ID>.memory."""
    doc = json.loads((GOLDEN / golden).read_text())
    page = Page(solar.html.render(doc, interactive=False))
    assert page.errors == []
    check_numbers(page, doc)
    assert {"summary", "devices", "roofline", "fusion-groups", "insights", "modules"} <= set(page.ids)
    for d, dev in doc["devices"].items():
        if "memory" in dev:
            assert page.fields[f"devices.{d}.memory.footprint_bytes"] == exact(
                dev["memory"]["footprint_bytes"])


def test_roofline_points_are_sized_by_time_and_measured_ops_sit_under_the_roof(block):
    """Each op's marker area follows its share of the time (radius by the square root), the
    heaviest are labeled without overlapping, and a `solar bench --profile` run's ops are
    plotted at their measured FLOP/s: below the roof when slower than their bound."""
    _, doc = block
    d = "H100_SXM"
    doc = json.loads(json.dumps(doc))
    ops = [o for o in doc["ops"] if o["analyzed"] and o["flops"] > 0 and o["bytes"] > 0]
    heaviest = max(ops, key=lambda o: o["seconds"][d])
    # a planted profile: the heaviest op ran 4x slower than its bound
    doc["measurement"] = {"device": d, "per_op": [
        {"op": heaviest["origin"]["op"], "measured_seconds": 4 * heaviest["seconds"][d],
         "sol_seconds": heaviest["seconds"][d]}]}
    chart = charts.op_roofline(doc, d)
    radius = {n: r for s in chart["series"] if s["mode"] == "markers" and "radius" in s
              for n, r in zip(s["text"], s["radius"])}
    assert radius[heaviest["name"]] == pytest.approx(charts.RADIUS_MIN + charts.RADIUS_ADD)
    lightest = min(ops, key=lambda o: o["seconds"][d])
    assert radius[lightest["name"]] < radius[heaviest["name"]]
    measured = [s for s in chart["series"] if s.get("symbol") == "x"]
    assert len(measured) == 1 and measured[0]["text"] == [heaviest["origin"]["op"]]
    # the same FLOPs in 4x the time: a quarter of the roof's FLOP/s
    roof = heaviest["flops"] / heaviest["seconds"][d]
    assert measured[0]["y"][0] == pytest.approx(roof / 4)
    labels = chart["placed_labels"]
    assert labels and labels[0]["text"] == heaviest["name"]
    assert any(lab["text"].endswith("(measured)") for lab in labels)
    svg_text = solar.html.svg.render(chart)
    assert svg_text.count('class="point-label"') == len(labels)


def test_fusion_groups_and_top_ops_name_ops_by_module_and_framework_op(tmp_path):
    pytest.importorskip("torch")
    from solar.analysis import ProgramOptions
    from solar.programs import analyze_file

    r = analyze_file(str(EXAMPLES / "torch" / "gpt_block.py"),
                     ProgramOptions(crosscheck=False)).report
    page = solar.html.render(r, interactive=False)
    groups = page[page.index('id="fusion-groups"'):page.index('id="insights"')]
    cells = re.findall(r"<td><code>(.*?)</code></td>", groups)  # each group's ops
    assert cells and any("blocks.0" in c for c in cells)
    assert not any(re.search(r"\bt\d+\.\w+\d\b", c) for c in cells)  # no t57.conv0
