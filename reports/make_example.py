"""Copy a campaign's report into reports/examples/NAME with the repros it links, and screenshot it.

    python reports/make_example.py CAMPAIGN_DIR_OR_DEVICE_FILES reports/examples/h100_campaign \\
        [--repros repros.tar.gz]

Keeps report.html, summary.json, junit.xml, stats.json and only the repro files the report
links (the smallest of each bucket), so the example stays small; writes report.png beside it.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test-only tooling: tests/support
from support.screenshot import screenshot  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dest")
    ap.add_argument("--repros", help="a repros.tar.gz that holds the linked repro files")
    args = ap.parse_args()
    src, dest = Path(args.src), Path(args.dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("report.html", "summary.json", "junit.xml", "stats.json"):
        if (src / name).exists():
            shutil.copy(src / name, dest / name)
    page = (dest / "report.html").read_text()
    linked = sorted(set(re.findall(r'href="(repros/[^"]+\.ptx)"', page)))
    (dest / "repros").mkdir(exist_ok=True)
    if args.repros:
        with tarfile.open(args.repros) as tf:
            for member in tf.getmembers():
                if member.name in linked and member.isfile():
                    data = tf.extractfile(member).read()
                    (dest / member.name).write_bytes(data)
    else:
        for rel in linked:
            if (src / rel).exists():
                shutil.copy(src / rel, dest / rel)
    print(screenshot(dest / "report.html", dest / "report.png"))
    print(f"{len(linked)} linked repros; {sum(1 for _ in (dest / 'repros').iterdir())} copied")
    return 0


if __name__ == "__main__":
    sys.exit(main())
