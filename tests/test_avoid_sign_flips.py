"""``avoid``'s ``accumulator-sign-flips-around-sync``: the generator flips a unit's accumulator sign
at most once between two wgmmas that write it, and never in a loop, so the known ptxas bug (one
of two flips kept when a warp-synchronous instruction sits between them) is not drawn."""
from __future__ import annotations

from fuzzptx.strategies.avoid import AVOIDABLE, avoid_script
from fuzzptx.strategies.control import Loop
from fuzzptx.strategies.pipelines import Mma, Stage, Touch, Wait

OPT = frozenset({"accumulator-sign-flips-around-sync"})
UNITS = ()  # the rewrite reads units only for repeated-wgmma's slices


def test_the_option_is_known_to_the_ledger_words():
    assert "accumulator-sign-flips-around-sync" in AVOIDABLE


def test_a_second_flip_before_the_unit_is_written_again_goes():
    script = (Stage((Mma(0),)), Wait(0), Touch(0), Wait(0), Touch(0), Touch(1))
    assert avoid_script(script, UNITS, OPT) == (Stage((Mma(0),)), Wait(0), Touch(0), Wait(0), Touch(1))
    assert avoid_script(script, UNITS, frozenset()) == script  # without the option nothing changes


def test_a_wgmma_writing_the_unit_between_keeps_both_flips():
    script = (Touch(0), Stage((Mma(0),)), Wait(0), Touch(0))
    assert avoid_script(script, UNITS, OPT) == script
    other = (Touch(0), Stage((Mma(1),)), Wait(0), Touch(0))  # another unit's wgmma: still two flips of unit 0
    assert avoid_script(other, UNITS, OPT) == (Touch(0), Stage((Mma(1),)), Wait(0))


def test_a_flip_in_a_loop_goes():
    script = (Loop(3, (Touch(0), Wait(0))), Touch(1))
    assert avoid_script(script, UNITS, OPT) == (Loop(3, (Wait(0),)), Touch(1))
