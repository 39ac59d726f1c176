"""Draws the images of docs/html-report.md: the HTML report's charts, each screenshot in
headless Chromium as a reader sees it, and a sweep plot.

    PYTHONPATH=python .venv/bin/python scripts/html_report_images.py [OUT_DIR]

OUT_DIR defaults to docs/img. Needs torch (the example is a PyTorch program), plotly (the
interactive charts), matplotlib (the sweep plot) and Chromium (`chromium`, which
scripts/setup installs). Writes html-roofline.png, html-where-time-goes.png and
sweep-batch.svg.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from solar.analysis import ProgramOptions  # noqa: E402
from solar.html import charts, page, where  # noqa: E402
from solar.programs import analyze_file  # noqa: E402
from solar.sweep import plot, table  # noqa: E402

PROGRAM = ROOT / "examples" / "torch" / "gpt_block.py"
DEVICES = ("H100_SXM", "B200")
BATCHES = (1, 4, 16, 64)


def screenshot(html: str, out: Path, width: int, height: int) -> None:
    """`html` as a page, screenshot at width x height by headless Chromium."""
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                    if shutil.which(b)), None)
    if browser is None:
        sys.exit("no Chromium installed (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "page.html"
        path.write_text(html, encoding="utf-8")
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--user-data-dir={tmp}/profile",
                        f"--window-size={width},{height}", "--virtual-time-budget=3000",
                        f"--screenshot={out}", path.as_uri()],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img"
    out.mkdir(parents=True, exist_ok=True)
    report = analyze_file(str(PROGRAM), ProgramOptions(archs=DEVICES, crosscheck=False)).report
    doc = report.to_dict()

    ch = page.Charts(interactive_charts=True)
    roofline = ch.render(charts.op_roofline(doc, DEVICES[0]))
    screenshot(page.document("roofline", roofline), out / "html-roofline.png", 1040, 560)
    screenshot(page.document("where the time goes", where.section(doc)),
               out / "html-where-time-goes.png", 1040, 900)

    # A sweep of the same block over the batch size on both devices.
    grid = {"batch_size": list(BATCHES)}
    points, rows = [], {}
    for b in BATCHES:
        r = analyze_file(str(PROGRAM), ProgramOptions(archs=DEVICES, crosscheck=False,
                                                      overrides={"batch_size": str(b)})).report
        task = {"program": PROGRAM.name, "settings": (("batch_size", b),), "archs": DEVICES,
                "key": str(b)}
        points.append(types.SimpleNamespace(program=types.SimpleNamespace(ref=PROGRAM.name),
                                            settings=task["settings"], key=task["key"]))
        for row in table.rows_from_report(r, task, 0.0, "local"):
            rows[(task["key"], row["arch"])] = row
    with tempfile.TemporaryDirectory() as tmp:
        (svg,) = plot.write_plots(tmp, [PROGRAM.name], grid, DEVICES, points, rows)
        shutil.copy(svg, out / "sweep-batch.svg")
    print("\n".join(str(out / n) for n in ("html-roofline.png", "html-where-time-goes.png",
                                            "sweep-batch.svg")))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    main()
