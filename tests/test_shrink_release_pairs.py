"""``fuzzptx shrink --ptxas R --keep hardware:O3!=O0|...``: the compile pair is judged with release R.
The pair predicate builds with the pinned release, so with a release the executor (whose metamorphic
judge takes the release as its compile stage's) judges instead."""
from fuzzptx.engine import predicate
from fuzzptx.oracles import toolchains


def test_a_pair_signature_with_a_release_is_judged_by_the_executor_with_that_release(monkeypatch):
    def pinned_only(sig):
        raise AssertionError("the pair predicate builds with the pinned release")

    monkeypatch.setattr(predicate, "metamorphic_predicate", pinned_only)
    made = []
    real = predicate.Executor

    def executor(judges, toolchain=None):
        made.append((tuple(judges), toolchain))
        return real(judges, toolchain=toolchain)

    monkeypatch.setattr(predicate, "Executor", executor)
    tc = toolchains.resolve("default")[0]
    predicate.signature_predicate("hardware:O3!=O0|mismatch", toolchain=tc)
    assert made == [(("hardware", "metamorphic"), tc)]


def test_a_pair_signature_without_a_release_keeps_the_pair_predicate(monkeypatch):
    monkeypatch.setattr(predicate, "metamorphic_predicate", lambda sig: ("pairs", sig))
    assert predicate.signature_predicate("hardware:O3!=O0|mismatch") == ("pairs", "hardware:O3!=O0|mismatch")
