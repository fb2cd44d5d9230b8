"""``fuzzptx.strategies.direct``: the one module on Hypothesis internals.  These tests pin what it
relies on, so a Hypothesis release that moves them fails here, by name, and not as a campaign
whose seeds stopped being reproducible."""
from __future__ import annotations

import subprocess
import sys

import hypothesis
import pytest
from hypothesis import assume, strategies as st

from fuzzptx.strategies import direct


def test_the_internals_it_reads_are_there():
    from hypothesis.internal.conjecture import providers

    assert callable(getattr(providers, "_get_local_constants", None)), hypothesis.__version__
    assert hasattr(providers, "CONSTANTS_CACHE") and hasattr(providers, "Constants"), hypothesis.__version__


def test_a_draw_is_a_function_of_its_key():
    s = st.lists(st.integers(0, 1000), min_size=3, max_size=8)
    with direct.reproducible():
        a = [direct.draw(s, f"7:{i}") for i in range(20)]
        b = [direct.draw(s, f"7:{i}") for i in range(20)]
    assert a == b and len({tuple(x) for x in a}) > 10  # the same per key, different across keys


def test_a_rejected_draw_is_drawn_again_and_an_impossible_one_says_so():
    def even(x):
        assume(x % 2 == 0)
        return x

    with direct.reproducible():
        assert all(direct.draw(st.integers(0, 10**6).map(even), f"k{i}") % 2 == 0 for i in range(10))
        with pytest.raises(direct.DrawFailed):
            direct.draw(st.integers().filter(lambda x: False), "never", attempts=3)


def test_draws_do_not_depend_on_what_else_the_process_imported():
    """Hypothesis mixes constants from loaded modules into draws; ``reproducible`` hides them, so a
    process that imported the judges draws the same programs as one that did not."""
    code = ("import hashlib, sys\n"
            "{extra}\n"
            "from fuzzptx.engine.generate import draw_direct\n"
            "print(hashlib.sha1(''.join(p.to_ptx() for p in draw_direct(6, 11)).encode()).hexdigest())\n")
    runs = [subprocess.run([sys.executable, "-c", code.format(extra=extra)], capture_output=True, text=True,
                           timeout=300) for extra in ("", "import fuzzptx.oracles.checker, fuzzptx.oracles.reference")]
    assert all(r.returncode == 0 for r in runs), [r.stderr[-500:] for r in runs]
    assert runs[0].stdout == runs[1].stdout
