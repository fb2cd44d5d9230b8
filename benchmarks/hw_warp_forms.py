"""Proof run (issue 4): sparse wgmma, mma.sync, mma.sp, wmma, ldmatrix/stmatrix: reference vs an H100.

The proof lives in ``tests/support/hw_warp_forms.py`` (the tests share its code); this script runs it:

    python benchmarks/hw_warp_forms.py --help
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.hw_warp_forms import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
