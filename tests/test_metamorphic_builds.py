"""The GPU side of the metamorphic judge compiles each build once per program: a pair compared on
several input sets (``reseeded``) reuses the build of its first set (only the header's seeds
differ, and ptxas reads no header).  Real ptxas compiles; the GPU worker is a recorder."""
from dataclasses import dataclass, field

from fuzzptx.judges import metamorphic
from fuzzptx.judges.compile_pairs import Build
from fuzzptx.judges.metamorphic import HardwareJudge, reseeded
from fuzzptx.program import Program
from fuzzptx.strategies.scalar_kernels import kernel


@dataclass
class _Recorder:
    """Stands in for ``HardwareWorker``: records which cubin each run was given."""
    cubins: list = field(default_factory=list)

    def run(self, program, *, cubin=None, kernel=None, timeout=None):
        self.cubins.append(cubin)

        class _R:
            outputs: dict = {}
            fault = None
        return _R()


def test_reseeded_inputs_reuse_the_build(monkeypatch):
    calls = []
    real = metamorphic.compile_ptx

    def counting(*a, **k):
        calls.append(k.get("opt_level"))
        return real(*a, **k)

    monkeypatch.setattr(metamorphic, "compile_ptx", counting)
    program = Program.from_ptx(kernel(7, mix="v3"))
    worker = _Recorder()
    judge = HardwareJudge(worker)
    for k in range(3):
        p = reseeded(program, k)
        assert k == 0 or p.to_ptx() != program.to_ptx()  # another input set: another header
        for build in (Build(3), Build(0)):
            assert judge.run(p, build).fault is None
    assert sorted(calls) == [0, 3]  # one compile per build, not one per input set
    assert len(worker.cubins) == 6 and len(set(worker.cubins)) == 2


def test_another_program_compiles_again(monkeypatch):
    calls = []
    real = metamorphic.compile_ptx
    monkeypatch.setattr(metamorphic, "compile_ptx", lambda *a, **k: calls.append(1) or real(*a, **k))
    judge = HardwareJudge(_Recorder())
    for seed in (7, 8):
        judge.run(Program.from_ptx(kernel(seed, mix="v3")), Build(3))
    assert len(calls) == 2


def _judged(programs, together: bool):
    """The metamorphic judge's verdicts on ``programs`` as a campaign block gives them (prepare in
    the pool, then on the GPU; the reference stands in for the GPU), its sides compiled for the
    whole block at once (``prepare_block``) or program by program (``PreparedPairs.compile``)."""
    from fuzzptx.judges.builtin import MetamorphicJudge
    from fuzzptx.judges.compile_pairs import SCALAR_PAIRS
    from fuzzptx.oracles.ptxas import compile_batch

    judge = MetamorphicJudge()
    judge.pairs, judge.inputs = SCALAR_PAIRS + ("maxrreg",), 2
    texts = [p.to_ptx() for p in programs]
    compiled = compile_batch(texts, want_cubin=True)
    prepared = [judge.prepare(p, t, r, gpu=True) for p, t, r in zip(programs, texts, compiled)]
    if together:
        judge.prepare_block(prepared)
    else:
        prepared = [p.compile(p.staged) for p in prepared]
    assert all(p.staged is None or not together for p in prepared)
    return [judge.on_gpu(p, prep, metamorphic.ReferenceWorker()) for p, prep in zip(programs, prepared)]


def test_a_block_compiles_its_sides_together(monkeypatch):
    programs = [Program.from_ptx(kernel(s, mix="v3")) for s in (11, 12, 13)]
    calls = []
    real = metamorphic.compile_builds
    monkeypatch.setattr(metamorphic, "compile_builds", lambda keys, **k: calls.append(len(keys)) or real(keys, **k))
    together = _judged(programs, True)
    assert len([c for c in calls if c]) <= 2  # the sides, then the maxrreg sides: one call each for the block
    calls.clear()
    alone = _judged(programs, False)
    assert len([c for c in calls if c]) >= len(programs)
    assert [(c.relations, c.pairs, [f.signature for _, f in c.findings]) for c in together] == \
        [(c.relations, c.pairs, [f.signature for _, f in c.findings]) for c in alone]
    assert all("O0" in " ".join(c.pairs) for c in together)


def test_a_campaigns_integer_kernel_takes_one_input_set_and_no_determinism_runs():
    """In a campaign (a pair share below 1) a random integer kernel's pairs run once on its own
    data (``compile_pairs.SCALAR_INPUTS``), without the two determinism runs: 4 launches, not 12."""
    from fuzzptx.judges.builtin import MetamorphicJudge
    from fuzzptx.judges.compile_pairs import CAMPAIGN_DEFAULT, CAMPAIGN_INPUTS
    from fuzzptx.oracles.ptxas import compile_batch

    class Counting(metamorphic.ReferenceWorker):
        runs = 0

        def run(self, *a, **k):
            Counting.runs += 1
            return super().run(*a, **k)

    program = Program.from_ptx(kernel(21, mix="v3"))
    text = program.to_ptx()
    (compiled,) = compile_batch([text], want_cubin=True)
    for share, launches in ((0.125, 3), (1.0, None)):
        judge = MetamorphicJudge()
        judge.pairs, judge.share, judge.inputs = CAMPAIGN_DEFAULT, share, CAMPAIGN_INPUTS
        prepared = judge.prepare(program, text, compiled, gpu=True)
        judge.prepare_block([prepared])
        Counting.runs = 0
        checked = judge.on_gpu(program, prepared, Counting())
        sides = 1 + len(checked.pairs)  # the -O3 build and one per pair
        if launches is not None:
            assert checked.inputs == 1 and Counting.runs == sides == launches
        else:  # replay's every pair: the determinism runs, every input set
            assert Counting.runs == 2 + sides * CAMPAIGN_INPUTS
