"""The pytest plugin: fuzz options and profiles, per-worker GPU pinning, repro on failure."""
from __future__ import annotations

import os
from pathlib import Path
from dataclasses import replace

import pytest

# The plugin checks --fuzzptx-judges against the judge registry, which imports the judges (and
# numpy): load them once here, since pytester's in-process runs unload the modules a run imports
# and numpy cannot be loaded twice in one process.
import fuzzptx.engine.run  # noqa: F401,E402

pytest_plugins = ["pytester"]


def test_profiles_and_overrides(pytester):
    pytester.makepyfile("""
        def test_cfg(fuzzptx_config):
            print("CFG", fuzzptx_config.profile, fuzzptx_config.examples, fuzzptx_config.judges, fuzzptx_config.fail_on,
                  fuzzptx_config.numerics)
    """)
    r = pytester.runpytest("-s", "-p", "no:cacheprovider")
    r.stdout.fnmatch_lines(["*CFG ci 60 ('reference', 'checker', 'ptxas') None None*"])
    r = pytester.runpytest("-s", "--fuzzptx-profile", "nightly", "--fuzzptx-judges", "reference,ptxas,hardware",
                           "--fuzzptx-fail-on", "checker:crash,reference:crash", "--fuzzptx-numerics", "hardware")
    r.stdout.fnmatch_lines(["*CFG nightly 2000 ('reference', 'ptxas', 'hardware') ('checker:crash', 'reference:crash') hardware*"])
    r = pytester.runpytest("-s", "--fuzzptx-examples", "3")
    r.stdout.fnmatch_lines(["*CFG ci 3 *"])
    r = pytester.runpytest("--fuzzptx-profile", "weekly")
    assert r.ret != 0
    r.stderr.fnmatch_lines(["*invalid choice*weekly*"])
    bad = pytester.path / "known.toml"
    bad.write_text('[[bug]]\nid = "x"\nkind = "model"\ncause = { judges = "checker!=ptxas" }\n')
    r = pytester.runpytest("-p", "no:cacheprovider", "--fuzzptx-known", str(bad))
    assert r.ret != 0
    r.stderr.fnmatch_lines([f"*--fuzzptx-known: {bad}:1: bug 'x': needs title, written_up*"])


@pytest.mark.parametrize("option,says", [
    (["--fuzzptx-judges", "bogus"], "*--fuzzptx-judges: unknown judge(s) bogus*"),
    (["--fuzzptx-examples", "-1"], "*--fuzzptx-examples -1: expected a positive number*"),
    (["--fuzzptx-ptxas", "9.9.9"], "*--fuzzptx-ptxas 9.9.9: 9.9.9 is not a known ptxas release*"),
    (["--fuzzptx-fail-on", "bogus"], "*--fuzzptx-fail-on 'bogus': expected all, or signature prefixes*not: bogus*"),
])
def test_a_bad_fuzz_option_is_a_usage_error_before_any_test(pytester, option, says):
    """A bad value was a set-up error of the first fuzz test (``E   pytest.UsageError`` in a test's
    report, and the other tests ran); a fail-on prefix no signature starts with let every finding
    pass.  Now pytest stops at start-up with one line."""
    pytester.makepyfile("""
        def test_plain():
            pass

        def test_cfg(fuzzptx_config):
            pass
    """)
    r = pytester.runpytest("-p", "no:cacheprovider", *option)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([says])
    assert "passed" not in r.stdout.str()


def test_one_gpu_per_xdist_worker(monkeypatch):
    from fuzzptx import pytest_plugin

    class Cfg:
        def __init__(self, judges):
            self.judges = judges

        def getoption(self, name):
            return self.judges

    from fuzzptx.oracles import hardware

    monkeypatch.setattr(hardware, "visible_gpu_count", lambda: 2)
    for worker, judges, want in [("gw0", "ptxas,hardware", "0"), ("gw3", "ptxas,hardware", "1"), ("gw3", "ptxas", None)]:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        pytest_plugin._pin_worker_gpu(Cfg(judges))
        assert os.environ.get("CUDA_VISIBLE_DEVICES") == want
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5")  # a scheduler's own pinning wins
    pytest_plugin._pin_worker_gpu(Cfg("hardware"))
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "5"


def _contradicted_program():
    """A legal kernel labelled as if ptxas had to reject it: real ptxas contradicts the label."""
    from fuzzptx.engine.generate import planted_programs

    p = planted_programs()[0][1]
    return replace(p, expect=(("ptxas", "rejected"),), notes=p.notes + ("mutation: planted-label breaks nothing",))


def test_check_program_writes_repro_and_fails(tmp_path):
    from fuzzptx.program import Program
    from fuzzptx.pytest_plugin import check_program

    class Cfg:
        judges = ("checker", "ptxas")
        repro_dir = str(tmp_path / "repros")
        fail_on = None
        numerics = None
        known = ()

    with pytest.raises(AssertionError) as exc:
        check_program(_contradicted_program(), Cfg())
    msg = str(exc.value)
    assert msg.startswith("expect!=ptxas|planted-label|")
    path = msg.split("repro: ")[1].strip()
    repro = Program.from_file(path)
    assert repro.signature.startswith("expect!=ptxas|planted-label") and ("ptxas", "accepted") in repro.expect
    assert repro.numerics == "spec" and "NUMERICS" not in Path(path).read_text()
    Cfg.numerics = "hardware"  # --fuzzptx-numerics hardware: the repro says how it was judged
    with pytest.raises(AssertionError):
        check_program(_contradicted_program(), Cfg())
    assert Program.from_file(path).numerics == "hardware"
    # A finding in the --fuzzptx-known baseline passes, if its numerics condition holds.
    from fuzzptx.triage.known import parse_known

    entry = ('[[bug]]\nid = "planted"\ntitle = "planted"\nkind = "model"\nwritten_up = "this test"\n'
             'cause = { judges = "expect!=ptxas", rule = "planted-label" }\n')
    Cfg.known = parse_known(entry + 'when = { numerics = "spec" }\n', "k.toml")
    with pytest.raises(AssertionError) as exc:
        check_program(_contradicted_program(), Cfg())  # judged in hardware numerics: not this entry's
    assert "root cause: expect!=ptxas planted-label" in str(exc.value)
    Cfg.known = parse_known(entry, "k.toml")
    check_program(_contradicted_program(), Cfg())
    Cfg.known = ()
    # A finding outside --fuzzptx-fail-on passes.
    Cfg.fail_on = ("checker:crash",)
    check_program(_contradicted_program(), Cfg())


def test_the_ptxas_option_adds_a_judge_per_release(pytester_like=None):
    """``--fuzzptx-ptxas SPEC``: the pinned release stays ``ptxas``, others are ``ptxas@R``."""
    from fuzzptx.oracles.ptxas import find_ptxas
    from fuzzptx.pytest_plugin import FuzzConfig

    class Cfg:
        _fuzzptx_known = ()

        def getoption(self, name):
            return {"--fuzzptx-judges": "reference,checker,ptxas", "--fuzzptx-ptxas": f"default,{find_ptxas()}",
                    "--fuzzptx-profile": "ci", "--fuzzptx-examples": None, "--fuzzptx-repro-dir": "x",
                    "--fuzzptx-numerics": None, "--fuzzptx-fail-on": "all"}[name]

    assert FuzzConfig(Cfg()).judges == ("reference", "checker", "ptxas", f"ptxas@{find_ptxas()}")
