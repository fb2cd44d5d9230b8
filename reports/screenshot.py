"""Open a fuzzptx report.html in headless Chromium and save a PNG screenshot of it.

    python reports/screenshot.py reports/examples/cpu_campaign/report.html reports/examples/report.png

Used by tests/test_report.py (skipped where no Chromium is installed) and to make the
committed screenshot under reports/examples/.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
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


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python reports/screenshot.py REPORT.html OUT.png", file=sys.stderr)
        return 2
    try:
        print(screenshot(Path(argv[0]), Path(argv[1])))
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"screenshot: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
