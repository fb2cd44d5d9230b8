"""Shapes the generator can turn down because they trigger a known bug (``reports/known_bugs.toml``
names them per bug), as other compiler fuzzers switch off known-buggy idioms: a campaign spends
its programs on what is not known yet.  The engine passes the set in (``programs(avoid=...)``);
``--rediscover`` passes none, and the tests prove each known bug is still found then."""
from __future__ import annotations

#: Option -> the shapes it turns down (``shapes.windows`` reads them).
AVOIDABLE: dict[str, str] = {
    "repeated-wgmma": "the same wgmma issued again on its accumulators right after itself, in one group or "
                      "once per commit (ptxas -O3 drops a copy: reports/findings/README.md)",
    "restart-in-flight": "a scale-d 0 wgmma restarting an accumulator set whose group is still in flight "
                         "across loops and calls (ptxas -O3 hands the dead registers out while the GMMA "
                         "still writes them)",
}


def check(avoid: frozenset[str]) -> frozenset[str]:
    """``avoid`` itself, or ValueError naming an option the generator does not know."""
    bad = sorted(set(avoid) - set(AVOIDABLE))
    if bad:
        raise ValueError(f"unknown avoid option(s) {', '.join(bad)} (have {', '.join(AVOIDABLE)})")
    return frozenset(avoid)
