"""Proof run (issue 9): the reference's hardware numerics vs an H100, bit for bit.

The proof lives in ``tests/support/hw_numerics_proof.py`` (the tests share its code); this script runs it:

    python benchmarks/hw_numerics_proof.py --help
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.hw_numerics_proof import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
