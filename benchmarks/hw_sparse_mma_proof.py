"""Proof run (issue 9): hardware numerics of sparse wgmma, mma.sync, mma.sp and wmma.mma vs an H100.

The proof lives in ``tests/support/hw_sparse_mma_proof.py`` (the tests share its code); this script runs it:

    python benchmarks/hw_sparse_mma_proof.py --help
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.hw_sparse_mma_proof import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
