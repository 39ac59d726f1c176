"""--system from Python: solar.analyze(graph, system=...), the console script (where --system
and --nodes take values, so the graph is the next word), and the HTML report's link rows."""

from __future__ import annotations

import json

import pytest

import solar
import solar.html
from solar import cli
from solar.html.fmt import exact
from conftest import run_solar

TP = """graph tp_layer
x = bf16[128,1024] input
w = bf16[1024,4096] weight
h = bf16[128,4096] einsum "mk,kn->mn" (x, w)
y = bf16[128,4096]{output} collective all_reduce sum {size=8, group="tp"} (h)
"""
S = 2 * 128 * 4096  # the all-reduce's buffer, bytes


def test_analyze_with_a_system_puts_its_device_first_and_prices_the_links():
    g = solar.parse_graph(TP)
    doc = json.loads(solar.analyze(g, system="DGX_H100", cache_aware=False).to_json())
    assert list(doc["devices"]) == ["H100_SXM"]
    dev = doc["devices"]["H100_SXM"]
    assert dev["links"][0]["link"] == "scale_up"
    assert dev["links"][0]["bytes"] == S  # NVLink SHARP: S per direction for 8 GPUs
    level = dev["fused"]
    links = sum(v for k, v in level["terms"].items() if k.startswith("scale_"))
    local = max(v for k, v in level["terms"].items() if not k.startswith("scale_"))
    assert level["seconds"] == pytest.approx(max(local, links))
    assert level["seconds_no_overlap"] == pytest.approx(local + links)
    assert doc["system"]["id"] == "DGX_H100" and doc["system"]["plan"] is None
    # --arch beside it adds single-device columns; without a system the link time is unknown.
    both = json.loads(solar.analyze(g, arch="B200", system="DGX_H100",
                                    cache_aware=False).to_json())
    assert set(both["devices"]) == {"H100_SXM", "B200"}  # an object: keys sorted
    assert "links" not in both["devices"]["B200"]
    alone = json.loads(solar.analyze(g, cache_aware=False).to_json())
    assert "system" not in alone
    unknown = alone["devices"]["H100_SXM"]["fused"]["unknown"]
    assert any("link time is left out" in u for u in unknown)


@pytest.mark.parametrize("args, graph", [
    (["analyze", "--system", "DGX_H100", "g.solar"], "g.solar"),
    (["analyze", "--system", "8xH100_SXM", "--nodes", "2", "g.solar"], "g.solar"),
    (["analyze", "--nodes", "2", "--system", "x.yaml", "hf:meta-llama/x"], "hf:meta-llama/x"),
])
def test_system_and_nodes_take_values(args, graph):
    assert cli._graph_arg(args) == graph  # noqa: SLF001


def test_console_script_and_html_show_the_links(tmp_path):
    (tmp_path / "tp.solar").write_text(TP)
    r = run_solar("analyze", "--system", "DGX_H100", "tp.solar", "--no-cache-aware",
                  "--json", "r.json", "--html", "r.html", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "system DGX_H100" in r.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    page = (tmp_path / "r.html").read_text()
    assert '<section id="links">' in page
    assert 'data-field="devices.H100_SXM.links[0].bytes"' in page
    assert f'data-value="{exact(doc["devices"]["H100_SXM"]["links"][0]["bytes"])}"' in page
    bad = run_solar("analyze", "tp.solar", "--system", "NO_SUCH_SYSTEM", cwd=tmp_path)
    assert bad.returncode == 6
    assert "known systems" in bad.stderr and "DGX_H100" in bad.stderr


def test_html_has_no_link_section_without_a_system():
    g = solar.parse_graph(TP)
    doc = json.loads(solar.analyze(g, cache_aware=False).to_json())
    assert '<section id="links">' not in solar.html.render(doc, interactive=False)


def test_a_program_object_with_a_system_is_refused_not_ignored():
    with pytest.raises(solar.UserError, match="takes a graph"):
        solar.analyze(object(), system="DGX_H100")
