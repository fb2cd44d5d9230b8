"""A fuzzptx report.html rendered to PNG in headless Chromium.

tests/test_report.py checks the report renders (skipped where no Chromium is installed);
reports/screenshot.py and reports/make_example.py make the committed screenshots with it.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "headless_shell")


def find_browser() -> str | None:
    return next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


def screenshot(html: Path, png: Path, *, width: int = 1400, height: int = 2400, timeout: float = 120.0) -> Path:
    """Render ``html`` (a local file) to ``png``; raises RuntimeError when no PNG appears."""
    browser = find_browser()
    if browser is None:
        raise RuntimeError("no Chromium found (apt-get install chromium)")
    png = png.resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="fuzzptx-chromium-") as profile:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--hide-scrollbars", f"--user-data-dir={profile}", f"--screenshot={png}",
               f"--window-size={width},{height}", html.resolve().as_uri()]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if not png.exists() or png.stat().st_size == 0:
        raise RuntimeError(f"{browser} wrote no screenshot (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    return png
