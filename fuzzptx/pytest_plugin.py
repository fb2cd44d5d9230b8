"""pytest plugin (entry point ``pytest11``): the ``gpu`` marker and fuzz options.

Registered through the package's entry point so that any project with fuzzptx
installed gets a ``gpu`` marker that skips cleanly on machines without an
sm_90a GPU and CuPy, instead of failing at import or launch time.
"""
from __future__ import annotations

import functools

import pytest


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """Why hardware tests cannot run here, or None when a usable GPU exists."""
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # ImportError, or CUDA libs missing
        return f"CuPy not importable ({type(exc).__name__}: {exc})"
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"no CUDA device ({type(exc).__name__})"
    if count == 0:
        return "no CUDA device"
    cc = cupy.cuda.Device(0).compute_capability
    if cc != "90":
        return f"device is sm_{cc}, wgmma needs sm_90a"
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "gpu: needs an NVIDIA sm_90a GPU and CuPy; skipped cleanly without one"
    )
    _pin_worker_gpu(config)
    config._fuzzptx_known = _load_known(config)
    if any(config.getoption(o, default=d) != d for o, d in _RESOLVED_AT_START.items()):
        _fuzz_config(config)  # a usage error before any test runs, not in the first fuzz test's set-up


# Options whose values the session's FuzzConfig resolves: given any, it is resolved at configure
# time (fuzzptx's modules are not imported by a pytest session that gives none).
_RESOLVED_AT_START = {"--fuzzptx-judges": None, "--fuzzptx-ptxas": None, "--fuzzptx-examples": None,
                      "--fuzzptx-numerics": None, "--fuzzptx-fail-on": "all"}


def _load_known(config: pytest.Config) -> tuple:
    """The ``--fuzzptx-known`` baseline, read once; a bad file is a usage error naming its line."""
    path = config.getoption("--fuzzptx-known", default=None)
    if not path:
        return ()
    from fuzzptx.errors import FuzzptxError
    from fuzzptx.triage.known import load_known

    try:
        return load_known(path)
    except FuzzptxError as exc:
        raise pytest.UsageError(f"--fuzzptx-known: {exc}") from None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {reason}")
    for item in gpu_items:
        item.add_marker(skip)


# ------------------------------------------------------------ fuzz options

PROFILES = {"ci": 60, "nightly": 2000}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fuzzptx")
    group.addoption("--fuzzptx-judges", default=None,
                    help="comma-separated judges for fuzz tests: built-in (reference, checker, ptxas, hardware, "
                         "mmasim, sass, metamorphic) or from an installed plugin (default: the pytest set of "
                         "fuzzptx.judges.builtin.DEFAULT_JUDGES, reference,checker,ptxas)")
    group.addoption("--fuzzptx-profile", default="ci", choices=sorted(PROFILES),
                    help="example budget profile: ci (fast) or nightly (long)")
    group.addoption("--fuzzptx-examples", type=int, default=None,
                    help="examples per fuzz test (overrides the profile)")
    group.addoption("--fuzzptx-repro-dir", default="fuzzptx-out/repros",
                    help="where a failing fuzz test writes its repro file (default: %(default)s under the "
                         "current directory)")
    group.addoption("--fuzzptx-ptxas", default=None, metavar="SPEC",
                    help="ptxas releases that judge beside the pinned one, each a judge ptxas@R (as fuzzptx run "
                         "--ptxas): a release, a list, a range, latest, all, or a path")
    group.addoption("--fuzzptx-numerics", default=None, choices=("spec", "hardware"),
                    help="the reference's numerics for every program: spec (the default) or hardware "
                         "(the bit-exact H100 model); repro files carry it")
    group.addoption("--fuzzptx-fail-on", default="all",
                    help="which findings fail a fuzz test: all, or comma-separated signature prefixes "
                         "(e.g. checker:crash,reference:crash)")
    group.addoption("--fuzzptx-known", default=None, metavar="FILE",
                    help="known-bug ledger (TOML, fuzzptx.triage.known, e.g. reports/known_bugs.toml): findings "
                         "whose root cause it lists do not fail a fuzz test")


def _pin_worker_gpu(config: pytest.Config) -> None:
    """One xdist worker per GPU: worker gwN sees GPU N mod count (before CUDA starts)."""
    import os

    # pytest loads this plugin in every session of this environment: fuzzptx's own modules are
    # imported only where a fuzz run asks for them, never at plugin load
    from fuzzptx.oracles import hardware

    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or "CUDA_VISIBLE_DEVICES" in os.environ:
        return
    if "hardware" not in (config.getoption("--fuzzptx-judges") or ""):  # (not resolved yet: at load, names only)
        return
    count = hardware.visible_gpu_count()
    if count:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(int(worker[2:]) % count)


class FuzzConfig:
    """What a fuzz test needs from the command line (the ``fuzzptx_config`` fixture)."""

    def __init__(self, config: pytest.Config):
        from fuzzptx.engine.config import RunConfig
        from fuzzptx.errors import FuzzptxError
        from fuzzptx.judges.selection import default_names, select

        self.profile = config.getoption("--fuzzptx-profile")
        examples = config.getoption("--fuzzptx-examples")
        if examples is not None and examples <= 0:
            raise pytest.UsageError(f"--fuzzptx-examples {examples}: expected a positive number of examples")
        try:
            names = config.getoption("--fuzzptx-judges") or ",".join(default_names("pytest"))
            # the one configuration of this session's fuzz tests, resolved once
            self.run = RunConfig(judges=select(names, config.getoption("--fuzzptx-ptxas"), option="--fuzzptx-judges"),
                                 examples=examples or PROFILES[self.profile],
                                 numerics=config.getoption("--fuzzptx-numerics"))
        except FuzzptxError as exc:  # (the release resolver names the CLI's --ptxas: here it is --fuzzptx-ptxas)
            text = str(exc)
            raise pytest.UsageError("--fuzzptx-" + text[2:] if text.startswith("--ptxas ") else text) from None
        self.judges = self.run.judges
        self.examples = self.run.examples
        self.repro_dir = config.getoption("--fuzzptx-repro-dir")
        self.numerics: str | None = self.run.numerics
        self.fail_on: tuple[str, ...] | None = _fail_on(config.getoption("--fuzzptx-fail-on"))
        known = getattr(config, "_fuzzptx_known", None)  # read at configure time (a usage error there)
        self.known: tuple = _load_known(config) if known is None else known

    def settings(self):
        from hypothesis import HealthCheck, settings

        return settings(max_examples=self.examples, deadline=None, database=None,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                               HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])


def _fail_on(text: str) -> tuple[str, ...] | None:
    """``--fuzzptx-fail-on``: None for ``all``, else the signature prefixes, each starting with a
    judge's name (a finding signature does: ``checker:crash``, ``reference!=hardware``,
    ``ptxas@13.5.37``) or ``expect``/``differ``; a prefix no signature can start with would
    silently let every finding pass."""
    import re

    from fuzzptx.judges.registry import names

    if text.strip() == "all":
        return None
    prefixes = tuple(x.strip() for x in text.split(",") if x.strip())
    heads = set(names()) | {"expect", "differ"}
    bad = [p for p in prefixes if (m := re.match(r"[A-Za-z_][\w-]*", p)) is None or m.group(0) not in heads]
    if not prefixes or bad:
        raise pytest.UsageError(f"--fuzzptx-fail-on {text!r}: expected all, or signature prefixes starting with a "
                                f"judge's name ({', '.join(sorted(heads))})" + (f"; not: {', '.join(bad)}" if bad else ""))
    return prefixes


def _fuzz_config(config: pytest.Config) -> FuzzConfig:
    """The session's one ``FuzzConfig`` (built on first use)."""
    made = getattr(config, "_fuzzptx_fuzz_config", None)
    if made is None:
        made = config._fuzzptx_fuzz_config = FuzzConfig(config)
    return made


@pytest.fixture(scope="session")
def fuzzptx_config(pytestconfig: pytest.Config) -> FuzzConfig:
    return _fuzz_config(pytestconfig)


def check_program(program, config: FuzzConfig, fail_on: tuple[str, ...] | None = None) -> None:
    """Judge one program; on a finding write its repro and fail with the path.

    ``fail_on`` (else ``--fuzzptx-fail-on``): the signature prefixes that fail the test;
    None fails on every finding.

    Hypothesis calls this again on every shrink step; each write replaces the
    file for that signature, so the file left is the smallest failing program.
    """
    import re
    from dataclasses import replace

    from fuzzptx.engine.executor import Executor
    from fuzzptx.inputs import make_dir
    from fuzzptx.judges.selection import JudgeSet

    judges = JudgeSet.of(config.judges)
    if config.numerics is not None:  # on the program, so its repro file says so too
        program = replace(program, numerics=config.numerics)
    if judges.needing("gpu") and gpu_unavailable_reason() is not None:
        judges = judges.without_device()
    # the engine's executor, as fuzzptx run judges (a block of one program)
    executor = Executor(judges, gpu=_gpu_worker() if judges.needing("gpu") else None)
    verdicts = executor.judge(program)
    _count_coverage(program, verdicts)
    findings = executor.findings(program, verdicts)
    prefixes = fail_on if fail_on is not None else config.fail_on
    if prefixes is not None:
        findings = [f for f in findings if any(s.startswith(tuple(prefixes)) for s in f.signatures)]
    if config.known:  # a known bug, by root cause (the ledger's numerics conditions test the program's)
        context = {"numerics": program.numerics or "spec"}
        findings = [f for f in findings if not any(k.matches(f.root_cause, context) for k in config.known)]
    if not findings:
        return
    from fuzzptx.engine.repro import finalize_repro_file, judges_that_ran, write_raw

    first = findings[0]
    out = make_dir(config.repro_dir, what="--fuzzptx-repro-dir")
    path = out / (re.sub(r"[^A-Za-z0-9]+", "_", first.signature).strip("_")[:100] + ".ptx")
    write_raw(path, program, first.signature)  # the engine's one repro writer: raw first, then EXPECT lines
    finalize_repro_file(str(path), program, judges_that_ran(verdicts), first.signature, None)
    raise FindingFailure(f"{first.signature}: {first.message}\nroot cause: {first.root_cause.words()} "
                         f"({first.root_cause}; not in the known-bug ledger)\nrepro: {path.resolve()}",
                         first.signature, first.kind, str(path.resolve()), str(first.root_cause))


# judged programs with tensor-core instructions, those whose reference run executed none
# (coverage:none), and the instructions executed of those they have: the session's summary line
_COVERAGE = {"programs": 0, "none": 0, "executed": 0, "of": 0}


def _count_coverage(program, verdicts) -> None:
    from fuzzptx import launch

    fields = launch.record_fields(program, verdicts)
    t = fields.get("tensor")
    if t is not None:
        _COVERAGE["programs"] += 1
        _COVERAGE["none"] += "coverage:none" in fields.get("notes", ())
        _COVERAGE["executed"] += t["executed"]
        _COVERAGE["of"] += t["of"]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """How much of the judged programs' tensor cores the reference reached: a program whose run
    executed none of them (coverage:none) agreed with the other judges about nothing."""
    c = _COVERAGE
    if c["programs"]:
        terminalreporter.write_line(
            f"fuzzptx: {c['programs']} judged program(s) with tensor-core instructions: {c['executed']} of "
            f"{c['of']} executed in the reference; {c['none']} with coverage:none (none of theirs ran)")


class FindingFailure(AssertionError):
    """A fuzz test's failure: a finding, with its signature, class and repro (the JUnit XML
    groups failing tests by class through ``pytest_runtest_makereport``)."""

    def __init__(self, message: str, signature: str, kind: str, repro: str, cause: str = ""):
        super().__init__(message)
        self.signature, self.kind, self.repro, self.cause = signature, kind, repro, cause


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A test failed by a finding carries the finding's class, signature and repro as properties
    (``--junitxml`` writes them on its testcase: ``fuzzptx_class`` groups the failures by what
    they mean), and the class heads the failure's section of the terminal report."""
    outcome = yield
    report = outcome.get_result()
    exc = call.excinfo.value if call.excinfo is not None else None
    if report.when == "call" and isinstance(exc, FindingFailure):
        props = [("fuzzptx_class", exc.kind), ("fuzzptx_root_cause", exc.cause), ("fuzzptx_signature", exc.signature),
                 ("fuzzptx_repro", exc.repro)]
        item.user_properties += props  # (the JUnit writer reads them from the teardown report, made from the item)
        report.user_properties += props
        report.sections.append(("fuzzptx finding class", exc.kind))


_GPU_WORKER = None


def _gpu_worker():
    """One long-lived GPU worker per test process (its GPU pinned per xdist worker); the hardware
    judge runs ptxas's own cubin of each program through it."""
    import atexit

    from fuzzptx.oracles.hardware import HardwareWorker

    global _GPU_WORKER
    if _GPU_WORKER is None:
        _GPU_WORKER = HardwareWorker()
        atexit.register(_GPU_WORKER.close)
    return _GPU_WORKER
