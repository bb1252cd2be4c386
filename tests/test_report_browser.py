"""report.html in a real browser: headless Chromium opens the page of a tiny GAN run, every image
it references loads, no script error or console error appears, and a screenshot is not blank.

Skipped when Chromium is not installed (``make install`` does not need it; CI installs it)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from gan_accel.loop.report import REPORT_FILE
from run_fixtures import run_gan

CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser") if shutil.which(name)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (apt-get install chromium)")

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--allow-file-access-from-files",
]

# Injected by the TEST into a copy of the page (the page itself has no script): records script
# errors from the start, and once everything loaded writes each image's size into the DOM.
PROBE_HEAD = "<script>window.__errors=[];window.onerror=function(m){window.__errors.push(String(m))};</script>"
PROBE_BODY = """<script>window.addEventListener('load',function(){
var r=[];for(var i of document.images){r.push([i.getAttribute('src'),i.naturalWidth])}
var p=document.createElement('pre');p.id='result';
p.textContent=JSON.stringify({images:r,errors:window.__errors});document.body.appendChild(p);});</script>"""


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "gan"
    run_gan(out, "--eval_every", "2", "--eval_num_images", "100", "--sample_every", "2")
    return out


def test_report_loads_in_chromium(run_folder, tmp_path):
    page = (run_folder / REPORT_FILE).read_text()
    probe = run_folder / "report_probe.html"  # beside the page: the same relative paths
    probe.write_text(page.replace("<head>", "<head>" + PROBE_HEAD, 1).replace("</body>", PROBE_BODY + "</body>", 1))
    try:
        done = chromium(tmp_path / "profile", "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    finally:
        probe.unlink()
    match = re.search(r'<pre id="result">(.*?)</pre>', done.stdout, re.S)
    assert match, f"the page did not finish loading: {done.stderr[-2000:]}"
    result = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert result["images"], "the page references no image"
    broken = [src for src, width in result["images"] if width == 0]
    assert not broken, f"images that did not load: {broken}"
    assert result["errors"] == []
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line or "Failed to load" in line]
    assert console == [], console


def test_report_screenshot_is_not_blank(run_folder, tmp_path):
    shot = tmp_path / "report.png"
    chromium(
        tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,2000", (run_folder / REPORT_FILE).as_uri()
    )
    assert shot.is_file()
    with Image.open(shot) as image:
        assert image.size == (1280, 2000)
        stat = ImageStat.Stat(image.convert("L"))
        assert stat.stddev[0] > 5, "the screenshot is one flat colour"
