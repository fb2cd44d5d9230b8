"""The target rows of ``benchmarks/README.md``: for each, the committed command that measures it,
the committed record it wrote, and how the record's figure reads in the table.

One table, three readers: ``benchmarks/reproduce.py ROW`` reruns a row's command into a
temporary record, prints the new figure beside the recorded one and says whether it lies within the
row's noise band (``Band``: how far two runs of the command were seen to differ, and why);
``tests/test_benchmark_rows.py``
checks that the README row names the command and the record, that the record exists, holds the
figure the README prints in bold, and carries its ``meta`` (``records.py``) -- except the gaps a
row declares in ``gaps``, which only a rerun on its device can fill (the README row says so).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


HERE = Path(__file__).resolve().parent

CPU = "2-core CPU machine"
H100 = "nvidia-h100-x1"
H200 = "nvidia-h200"


@dataclass(frozen=True)
class Band:
    """How far a rerun's figure may lie from the recorded one and still reproduce it: ``relative``
    of the recorded value (0: a count, which the same code on the same programs gives exactly),
    ``why`` the runs it comes from.  ``load_bound``: a time that grows with the machine's load, so
    only a rerun at a like load can reproduce it."""

    relative: float
    why: str
    load_bound: bool = False


EXACT = Band(0.0, "a count: the same code on the same programs gives the same figure (the record's commit says "
                  "which code; a change of the generator draws other programs)")


@dataclass(frozen=True)
class Row:
    """One target: ``command`` as the README prints it; ``rerun`` the same with ``{out}`` where the
    record goes (None: not rerunnable here); ``figure`` the record's figure as the README prints it."""

    id: str
    command: str
    record: str  # relative to benchmarks/
    figure: Callable[[dict], str]
    device: str = CPU
    rerun: tuple[str, ...] | None = None
    gaps: tuple[str, ...] = ()  # meta fields the record lacks until its device reruns the command
    note: str = ""
    band: Band = EXACT
    value: Callable[[dict], float] | None = None  # the figure as a number (a band other than EXACT needs it)
    sample: tuple[str, ...] | None = None  # ``rerun`` of a fixed subset (reproduce.py --sample) ...
    sample_figure: Callable[[dict], str] | None = None  # ... and that subset's figure in the full record

    @property
    def path(self) -> Path:
        return HERE / self.record


def _times(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}×"


def _campaign_ratio(name: str) -> Callable[[dict], str]:
    return lambda r: f"{r['campaigns'][name]['ratio_to_bare_before_and_after']:.2f}"


def _agreement(k: int) -> Callable[[dict], str]:
    """Exact agreement on the programs with no "may" code (a "may" program is counted apart)."""
    return lambda r: f"{r['distributions'][k]['exact']}/{r['distributions'][k]['may_free_programs']}"


def _agreement_sample(k: int) -> Callable[[dict], str]:
    """The same on the fixed subset a full record scores apart (``support.agreement --sample``); a
    record made before the subset was scored apart says so."""
    def figure(r: dict) -> str:
        sample = r["distributions"][k].get("sample")
        return f"{sample['exact']}/{sample['may_free_programs']}" if sample else "not recorded (the full run predates --sample)"
    return figure


def _shrink(r: dict) -> str:
    groups = [g for g in r.values() if isinstance(g, dict) and "summary" in g]
    ok = sum(g["summary"]["at_most_10_instructions_within_60_s"] for g in groups)
    return f"{ok} of {sum(g['summary']['cases'] for g in groups)}"


def _scaling(r: dict) -> str:
    """CPU ms per kernel of check at each size; the CPU seconds of each whole shrink, where it ran."""
    rows = {row["kernels"]: row for row in r["rows"] if "check" in row}
    shrinks = {row["kernels"]: row["shrink"] for row in r["rows"] if "shrink" in row}
    return ("check " + " / ".join(f"{rows[k]['check']['cpu_ms_per_kernel']:.1f}" for k in sorted(rows))
            + ("; shrink " + " / ".join(f"{shrinks[k]['cpu_seconds']:.1f}" for k in sorted(shrinks)) + " s" if shrinks else ""))


def _bug_yield(r: dict) -> str:
    """The avoiding run's distinct bugs and known-bug findings (the first run of the record)."""
    run = r["runs"][0]
    return f"{run['yield']['distinct']} distinct bugs, {run['known_findings']} known-bug findings"


def _root_causes(r: dict) -> str:
    """A campaign's findings counted as root causes again: distinct bugs, the known ones, per GPU-hour."""
    return (f"{r['distinct_bugs']} distinct bugs ({len(r['known_bugs'])} known), {r['distinct_per_gpu_hour']} per "
            f"GPU-hour, known-bug findings {r['known_findings_share']:.1%}")


def _vocabulary(r: dict) -> str:
    """Forms and opcodes of the real kernels reached, per release."""
    return "; ".join(f"{x['release']} {x['forms_fraction']:.1%} of forms, {x['opcodes_fraction']:.1%} of opcodes"
                     for x in r["rows"])


CAMPAIGN_DEFAULTS = ("python3 benchmarks/campaign_throughput.py --examples 6000 --seed 29 --gpus all --bare-after "
                     "--only defaults --out $OUT/campaign_throughput_h200_cli_defaults.json")
AGREEMENT = "PYTHONPATH=$PWD:tests python3 -m support.agreement --strategies 2000 --seeds 1-10 --per-seed 100"
AGREEMENT_RERUN = ("python", "-m", "support.agreement", "--strategies", "2000", "--seeds", "1-10", "--per-seed", "100",
                   "--report", "{out}.md", "--json", "{out}")
AGREEMENT_SAMPLE = ("python", "-m", "support.agreement", "--strategies", "2000", "--seeds", "1-10", "--per-seed", "100",
                    "--sample", "--json", "{out}")
AGREEMENT_GAPS = ("versions.nvdisasm",)  # no disassembler takes part in the agreement figures

ROWS: tuple[Row, ...] = (
    Row("1", "python benchmarks/bench_fuzz_run.py --examples 200 --seed 0", "results/fuzz_run.json",
        lambda r: _times(r["ratio_cpu_over_ptxas_alone_cpu"]),
        rerun=("python", "benchmarks/bench_fuzz_run.py", "--examples", "200", "--seed", "0", "--out", "{out}"),
        value=lambda r: r["ratio_cpu_over_ptxas_alone_cpu"],
        band=Band(0.10, "CPU over CPU: issue 42's two quiet reruns of the command gave 1.82x and 1.85x, the record "
                        "under load 13.7 1.85x; ptxas alone once measured 14% slower on a loaded machine (1.60x, "
                        "2026-11-26), so a rerun under load can fall below the band")),
    Row("2a", CAMPAIGN_DEFAULTS, "results/campaign_throughput_h200_cli_defaults.json", _campaign_ratio("defaults"),
        device=H200, note="the campaign fuzzptx campaign runs with its default settings (commands.campaign_config)"),
    Row("2b", CAMPAIGN_DEFAULTS, "results/campaign_throughput_h200_cli_defaults.json",
        lambda r: f"{r['campaigns']['defaults']['steady_ratio_to_bare_ptxas']:.2f}", device=H200,
        note="the same run's rate after its first wave of blocks (no pool start-up, no tail)"),
    Row("3a", "python benchmarks/bench_sass.py --examples 512 --seed 3 --skip-releases", "results/sass_cost.json",
        lambda r: _times(r["ratio_cpu"], 3),
        rerun=("python", "benchmarks/bench_sass.py", "--examples", "512", "--seed", "3", "--skip-releases",
               "--out", "{out}"),
        value=lambda r: r["ratio_cpu"], band=Band(0.10, "two runs of the command, load 15-21: CPU ratio 0.159 and 0.151 "
                                                "(ptxas 44.31 and 44.38 s, sass 7.06 and 6.71 s); the wall ratio of the "
                                                "same programs moved 0.124-0.151 with the load")),
    Row("3b", "python3 benchmarks/bench_checker_campaign.py --n 300 --seeds 7,8,9 --ptxas 320 --out "
        "$OUT/checker_campaign_h200.json", "results/checker_campaign_h200.json",
        lambda r: _times(r["ratio_checker_over_batched"], 3), device=H200,
        note="on the GPU machine's 16 cores (the H100 kind was not lent); the 2-core machine's figure under "
             "load is results/checker_campaign.json (0.269x)"),
    Row("4a", "python benchmarks/bench_shrink.py", "results/shrink.json", _shrink,
        rerun=("python", "benchmarks/bench_shrink.py", "--out", "{out}"),
        band=Band(0.0, "a count of cases that end within a 60-s wall budget each: a loaded machine runs them out",
                  load_bound=True)),
    Row("4b", "python benchmarks/bench_main_job.py --examples 100", "results/main_job_2core.json",
        lambda r: f"{r['wall_seconds']:.1f} s",
        rerun=("python", "benchmarks/bench_main_job.py", "--examples", "100", "--out", "{out}"),
        value=lambda r: r["wall_seconds"], band=Band(0.25, "two runs of the command at load 17-22: 144.6 s (the record) and "
                                                    "140.3 s; quiet, the day before: 7.0 s", load_bound=True)),
    Row("5a", AGREEMENT, "results/checker_vs_ptxas.json", _agreement(0), rerun=AGREEMENT_RERUN, gaps=AGREEMENT_GAPS,
        sample=AGREEMENT_SAMPLE, sample_figure=_agreement_sample(0)),
    Row("5b", AGREEMENT, "results/checker_vs_ptxas.json", _agreement(1), rerun=AGREEMENT_RERUN, gaps=AGREEMENT_GAPS,
        sample=AGREEMENT_SAMPLE, sample_figure=_agreement_sample(1)),
    Row("5c", AGREEMENT, "results/checker_vs_ptxas.json", _agreement(2), rerun=AGREEMENT_RERUN, gaps=AGREEMENT_GAPS,
        sample=AGREEMENT_SAMPLE, sample_figure=_agreement_sample(2)),
    Row("6", "python benchmarks/bench_scaling.py --kernels 1000 --shrink-kernels 10,30,100 --shrink-seconds-per-kernel 10 "
        "--skip replay,ptxas", "results/scaling.json", _scaling,
        rerun=("python", "benchmarks/bench_scaling.py", "--kernels", "1000", "--shrink-kernels", "10,30,100",
               "--shrink-seconds-per-kernel", "10", "--skip", "replay,ptxas", "--out", "{out}"),
        value=lambda r: min((row for row in r["rows"] if "check" in row), key=lambda row: row["kernels"])["check"][
            "cpu_ms_per_kernel"],
        band=Band(0.15, "check's CPU ms per kernel at 1,000 kernels: 25.6 (2026-11-28 07:00, load ~20) and 29.5 "
                        "(the record, load ~20); 14.8 quiet (2026-11-26): the shared caches of a loaded machine "
                        "double it", load_bound=True)),
    Row("7", "python3 benchmarks/bug_yield.py --time 180 --seed 53 --gpus all", "results/bug_yield_h200.json", _bug_yield,
        device=H200, note="the avoiding run on the H200 with scalar kernels (--scalar-share 0.25, the default with a "
                          "GPU); before them: results/bug_yield_h100.json (0 real bugs in 180 s); the CPU dry run: "
                          "results/bug_yield_cpu_dry.json"),
    Row("7b", "python3 benchmarks/campaign_rootcauses.py benchmarks/results/campaign38_h200x4 --walls "
        "208.64,207.22,157.36 --gpus 4 --known git:8bc6387 --out benchmarks/results/campaign38_h200x4.json",
        "results/campaign38_h200x4.json", _root_causes,
        rerun=("python3", "benchmarks/campaign_rootcauses.py", "benchmarks/results/campaign38_h200x4", "--walls",
               "208.64,207.22,157.36", "--gpus", "4", "--known", "git:8bc6387", "--out", "{out}"),
        note="the campaign itself ran on 4 H200s (fuzzptx campaign --time 200/200/150 --gpus all --seed 3838, three "
             "parts with --resume); its findings' lines are committed beside the record"),
    Row("8", "python benchmarks/sass_vocabulary.py --programs 2000 --seed 11 --ptxas 13.0.88,12.9.86,13.5.37 --out "
        "benchmarks/results/sass_vocabulary_seed11_2000_releases.json", "results/sass_vocabulary_seed11_2000_releases.json",
        _vocabulary,
        rerun=("python", "benchmarks/sass_vocabulary.py", "--programs", "2000", "--seed", "11", "--ptxas",
               "13.0.88,12.9.86,13.5.37", "--out", "{out}")),
)

BY_ID = {r.id: r for r in ROWS}
