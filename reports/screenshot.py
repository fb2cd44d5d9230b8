"""Open a fuzzptx report.html in headless Chromium and save a PNG screenshot of it.

    python reports/screenshot.py reports/examples/cpu_campaign/report.html reports/examples/report.png

Makes the committed screenshot under reports/examples/; the rendering (``screenshot``) is
tests/support/screenshot.py's, which tests/test_report.py also uses.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test-only tooling: tests/support
from support.screenshot import screenshot  # noqa: E402


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
