"""Where the seed documents are: ``$FUZZPTX_SEEDS``, else ``shared/seeds`` beside the checkout (as
CI lays it out), else inside it."""
import os
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]


def seeds_dir() -> Path:
    env = os.environ.get("FUZZPTX_SEEDS")
    if env:
        return Path(env)
    for cand in (_REPO.parent / "shared" / "seeds", _REPO / "shared" / "seeds"):
        if cand.is_dir():
            return cand
    return _REPO.parent / "shared" / "seeds"
