"""Proof run for the warp-level ``mma`` forms ptxas emulates on sm_90a (issue 9).

The proof lives in ``tests/support/numerics_mma_probe.py`` (the tests share its code); this script runs it:

    python benchmarks/numerics_mma_probe.py --help
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.numerics_mma_probe import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
