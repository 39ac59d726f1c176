"""The HTML report in a real browser: headless Chromium (Debian's `chromium`, which
scripts/setup installs) opens the page from file://, runs its scripts, and takes a
screenshot. The charts must have rendered (plotly drew its SVG, and the screenshot is not
blank where each chart is) and the page must have made no network request.

The browser is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: no
port, no client library): every request the page makes is a Network.requestWillBeSent
event, and none may be for anything but the file itself (file:, data:, about:). Chromium's
own background traffic (component updates, time queries) is not the page's: it is switched
off where flags can, and sent to a dead proxy on 127.0.0.1 in case it is not, so nothing
leaves the machine. A control page that loads an http:// image proves the requests are seen.
"""

from __future__ import annotations

import base64
import io
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES

import solar
import solar.html

pytest.importorskip("PIL", reason="Pillow (matplotlib's dependency) reads the screenshot")
from PIL import Image, ImageStat  # noqa: E402

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
BROWSER = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium installed (Debian: apt-get install chromium; "
                            "scripts/setup installs it)")

WIDTH = 1400
# Each chart's interactive and static boxes in page coordinates, and what plotly drew in the
# interactive one (its SVG layers, one .point per marker).
PROBE = """JSON.stringify((function () {
  var out = {height: document.documentElement.scrollHeight, charts: []};
  document.querySelectorAll('figure.chart').forEach(function (f) {
    function box(sel) {
      var e = f.querySelector(sel); if (!e) return null;
      var r = e.getBoundingClientRect();
      return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height];
    }
    out.charts.push({id: f.dataset.chart, interactive: box('.interactive'),
                     static: box('.static svg'),
                     labels: Array.from(f.querySelectorAll(
                         '.interactive g.annotation, .static text.point-label')).map(function (e) {
                       var r = e.getBoundingClientRect();
                       return [r.left, r.top, r.width, r.height, e.textContent];
                     }).filter(function (b) { return b[2] > 0 && b[3] > 0; }),
                     plotly_svgs: f.querySelectorAll('.interactive svg.main-svg').length,
                     plotly_points: f.querySelectorAll('.interactive .point').length});
  });
  return out;
})())"""


class Browser:
    """Headless Chromium driven over the DevTools protocol on fds 3 (to it) and 4 (from it),
    messages separated by NUL bytes."""

    def __init__(self, profile: Path):
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()

        def fds():  # the protocol's fixed descriptors in the child
            a, b = os.dup(to_r), os.dup(from_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--disable-dev-shm-usage",  # containers with a small /dev/shm
                "--remote-debugging-pipe", f"--user-data-dir={profile}",
                f"--window-size={WIDTH},1000",
                # Chromium's own traffic: off where a flag can, else into a dead proxy
                "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-default-apps",
                "--disable-domain-reliability", "--no-pings", "--disable-breakpad",
                "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter",
                "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=fds, close_fds=False,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL,
                                     env={**os.environ, "HOME": str(profile)})
        os.close(to_r)
        os.close(from_w)
        self._next = 0
        self._messages: "queue.Queue[dict]" = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.events: list = []
        self.session = None

    def _read(self):
        buf = b""
        while True:
            chunk = os.read(self._from_r, 1 << 16)
            if not chunk:
                return
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                self._messages.put(json.loads(msg))

    def call(self, method: str, timeout: float = 30.0, session: bool = True, **params):
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._messages.get(timeout=max(0.01, deadline - time.monotonic()))
            if m.get("id") == self._next:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict:
        for m in self.events:
            if m.get("method") == method:
                return m
        deadline = time.monotonic() + timeout
        while True:
            m = self._messages.get(timeout=max(0.01, deadline - time.monotonic()))
            self.events.append(m)
            if m.get("method") == method:
                return m

    def open(self, url: str) -> None:
        """A new page, network logging on, `url` loaded (its load event fired)."""
        target = self.call("Target.createTarget", session=False, url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", session=False, targetId=target,
                                 flatten=True)["sessionId"]
        self.call("Network.enable")
        self.call("Page.enable")
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def requests(self) -> list:
        """URLs of every request the page made (Network.requestWillBeSent)."""
        while not self._messages.empty():
            self.events.append(self._messages.get())
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def evaluate(self, expression: str):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return r["result"]["value"]

    def screenshot(self, height: int) -> "Image.Image":
        self.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=height,
                  deviceScaleFactor=1, mobile=False)
        time.sleep(0.5)  # plotly's responsive charts redraw after a resize
        data = self.call("Page.captureScreenshot", format="png")["data"]
        return Image.open(io.BytesIO(base64.b64decode(data)))

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=5)
        except Exception:  # noqa: BLE001 - it may close before answering
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_w)
        os.close(self._from_r)


def _not_the_file(urls: list) -> list:
    return [u for u in urls if not u.startswith(("file:", "data:", "about:", "blob:"))]


@pytest.fixture(scope="module")
def report():
    return solar.analyze(EXAMPLES / "transformer_block.solar", arch=["H100_SXM", "B200"])


def test_page_renders_its_charts_offline(report, tmp_path):
    # Without plotly (scripts/setup installs it) the page has its static charts only.
    has_plotly = solar.html.interactive.available()
    path = tmp_path / "report.html"
    solar.html.write(report, str(path))
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(path.as_uri())
        first = json.loads(browser.evaluate(PROBE))
        image = browser.screenshot(first["height"]).convert("L")
        probe = json.loads(browser.evaluate(PROBE))  # the boxes at the screenshot's size
        urls = browser.requests()
    finally:
        browser.close()
    image.save(tmp_path / "report.png")  # for a person looking at a failure
    assert urls and urls[0] == path.as_uri()  # the log works: it saw the page itself
    assert _not_the_file(urls) == [], f"the page made network requests: {_not_the_file(urls)}"

    # One roofline per device and the ski-slope, each drawn once: the interactive chart where
    # scripts run, the static one only as its no-script and print fallback.
    ids = [c["id"] for c in probe["charts"]]
    assert ids == [f"roofline-{d}" for d in report.to_dict()["devices"]] + ["ski-slope"]
    assert len(ids) == 3
    analyzed = [o for o in report.to_dict()["ops"]
                if o["analyzed"] and o["flops"] > 0 and o["bytes"] > 0]
    assert image.size[0] == WIDTH
    for c in probe["charts"]:
        if has_plotly:
            assert c["plotly_svgs"] >= 1, f"{c['id']}: plotly drew nothing"
            if c["id"].startswith("roofline"):
                assert c["plotly_points"] == len(analyzed), c  # every op placed
        else:
            assert c["interactive"] is None
        shown = [w for w in ("interactive", "static") if c[w] and c[w][2] > 0 and c[w][3] > 0]
        assert shown == (["interactive"] if has_plotly else ["static"]), (c["id"], shown)
        for which in shown:
            x, y, w, h = c[which]
            assert w > 300 and h > 250, (c["id"], which, c[which])
            assert y + h <= image.size[1], (c["id"], which, c[which], image.size)
            region = image.crop((int(x), int(y), int(x + w), int(y + h)))
            stat = ImageStat.Stat(region)
            # A rendered chart has axes, text and curves: far from a uniform fill.
            assert stat.stddev[0] > 20, (c["id"], which, stat.stddev)
            dark = sum(region.histogram()[:128]) / (region.size[0] * region.size[1])
            assert 0.005 < dark < 0.5, (c["id"], which, dark)


def test_the_request_log_sees_a_page_that_loads_from_the_network(tmp_path):
    """The control: a page with one http:// image: its request is logged (else the test
    above would pass whatever the page loads). The dead proxy keeps it on the machine."""
    path = tmp_path / "control.html"
    path.write_text('<!DOCTYPE html><html><body><img src="http://solar.invalid/x.png">'
                    "</body></html>", encoding="utf-8")
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(path.as_uri())
        urls = browser.requests()
    finally:
        browser.close()
    assert _not_the_file(urls) == ["http://solar.invalid/x.png"]


def _overlapping(boxes: list) -> list:
    return [(a[4], b[4]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3]
            and b[1] < a[1] + a[3]]


@pytest.mark.parametrize("interactive_charts", [True, False])
def test_one_chart_per_figure_and_labels_that_do_not_overlap(report, tmp_path, interactive_charts):
    """Each figure shows one chart; the roofline labels its heaviest points without any two
    labels overlapping; the "where the time goes" chart has each device's three levels. A
    screenshot of the page is kept beside the test's files."""
    if interactive_charts and not solar.html.interactive.available():
        pytest.skip("plotly is not installed")
    path = tmp_path / "report.html"
    solar.html.write(report, str(path), interactive=interactive_charts)
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(path.as_uri())
        first = json.loads(browser.evaluate(PROBE))
        image = browser.screenshot(first["height"])
        probe = json.loads(browser.evaluate(PROBE))
        levels = json.loads(browser.evaluate(
            "JSON.stringify(Array.from(document.querySelectorAll('figure.time-chart')).map("
            "function (f) { return [f.dataset.chart, Array.from(f.querySelectorAll("
            "'table.time tr[data-level]')).map(function (r) { return r.dataset.level; })]; }))"))
    finally:
        browser.close()
    image.save(tmp_path / "report.png")
    assert image.size[0] == WIDTH
    devices = list(report.to_dict()["devices"])
    for c in probe["charts"]:
        shown = [w for w in ("interactive", "static") if c[w] and c[w][2] > 0 and c[w][3] > 0]
        assert len(shown) == 1, (c["id"], shown)
        if c["id"].startswith("roofline"):
            assert len(c["labels"]) >= 3, c  # the heaviest points are labeled
            assert _overlapping(c["labels"]) == [], c["id"]
    assert levels == [[f"time-{d}", ["unfused", "framework", "fused"]] for d in devices]


def test_sweep_plot_axes_have_tick_labels(tmp_path):
    """A sweep chart in the browser: its log axis has a labeled tick per decade."""
    pytest.importorskip("matplotlib")
    import types

    from solar.sweep import plot

    P = types.SimpleNamespace
    grid = {"batch": [1, 8, 64]}
    points = [P(program=P(ref="mlp.py"), settings=(("batch", b),), key=str(b)) for b in grid["batch"]]
    rows = {(str(b), "H100_SXM"): {"status": "ok", "fused_seconds": 1e-4 * b} for b in grid["batch"]}
    (svg_path,) = plot.write_plots(str(tmp_path), ["mlp.py"], grid, ["H100_SXM"], points, rows)
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(Path(svg_path).as_uri())
        ticks = json.loads(browser.evaluate(
            "JSON.stringify(['xtick', 'ytick'].map(function (k) { return Array.from("
            "document.querySelectorAll('g[id^=\"' + k + '_\"] text')).map(function (t) {"
            " var r = t.getBoundingClientRect(); return [t.textContent.trim(), r.width]; }); }))"))
    finally:
        browser.close()
    xticks, yticks = ticks
    assert [t for t, w in xticks if w > 0] == ["1", "8", "64"]
    # 0.1 ms .. 6.4 ms: a labeled tick at every decade inside the axis
    assert {"100 us", "1 ms"} <= {t for t, w in yticks if w > 0}, yticks
