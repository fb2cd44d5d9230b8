"""``fuzzptx bundle REPRO -o DIR``: one directory a compiler team can act on.

It holds the minimal PTX (``repro.ptx``, the repro file as it stands: ptxas reads it, the
fuzzptx header is comments), ``commands.sh`` (the ptxas command lines with the release, the
disassembly, ``fuzzptx replay``), what ptxas printed and the SASS at -O0 and -O3 (the whole
listing, and in the README the lines around the wgmmas), the releases that have it (the release
matrix over the ptxas releases cached here: ``fuzzptx.engine.matrix``), the reference's output
buffers and whatever the repro records of the GPU (its EXPECT and NOTE lines), and a README in
plain words.  Nothing is fetched: releases that are not cached are listed as such.  A bundle is
about one kernel, the one the repro launches: in a plain file with several kernels (nvcc's,
CUTLASS's) the first, or the one ``--kernel NAME`` names; its SASS hazards and its SASS in the README.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from fuzzptx.engine import matrix as release_matrix
from fuzzptx.engine.executor import Executor
from fuzzptx.helptext import Progress
from fuzzptx.inputs import InputError, make_dir, read_text
from fuzzptx.judges import differ
from fuzzptx.judges.finding import COMPILER, classify
from fuzzptx.oracles import toolchains
from fuzzptx.oracles.ptxas import (BASE_TIMEOUT_S, PER_MB_S, PINNED_VERSION, TIMEOUT_ENV, compile_ptx, find_ptxas,
                                   use_ptxas_timeout)
from fuzzptx.oracles.sass import disassemble, disassembler, hazards as sass_hazards, run_disassembler
from fuzzptx import launch
from fuzzptx.program import Program

_EXCERPT_AROUND = 6  # SASS lines kept before and after each GMMA instruction in the README excerpt


def cached_releases() -> list[str]:
    """The ptxas releases usable here without a download (the pinned one and the cache's)."""
    return [r["release"] for r in toolchains.status() if r["status"] != "fetchable"]


_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/.*?;")


def _sass_of(text: str, opt: int, tool: list[str] | None, ptxas: str | None = None) -> tuple[Any, list[str]]:
    """ptxas's result and the instruction lines of its cubin's disassembly (``nvdisasm -c``)."""
    res = compile_ptx(text, opt_level=opt, want_cubin=True, ptxas=ptxas)
    if not (res.accepted and res.cubin and tool):
        return res, []
    return res, [m.group(0) for m in map(_SASS_LINE.search, run_disassembler(res.cubin, tool).splitlines()) if m]


def _function_sass(res: Any, kernel: str, tool: list[str] | None) -> list[str]:
    """The instruction lines of one kernel of a cubin (its function of the ``disassemble`` listing)."""
    if not (res.accepted and res.cubin and tool) or kernel not in res.kernel_names:
        return []
    fn = disassemble(res.cubin, tool).function(res.kernel(kernel))
    return [i.text for i in fn.instrs] if fn is not None else []


def excerpt(lines: list[str], around: int = _EXCERPT_AROUND) -> list[str]:
    """The SASS lines within ``around`` of a GMMA / warpgroup instruction (``...`` between runs)."""
    keep = sorted({j for i, ln in enumerate(lines) if "GMMA" in ln or "WARPGROUP" in ln
                   for j in range(max(0, i - around), min(len(lines), i + around + 1))})
    out, last = [], None
    for j in keep:
        if last is not None and j != last + 1:
            out.append("...")
        out.append(lines[j])
        last = j
    return out or lines[:40]


def _outputs_text(ref: Any) -> str:
    """The reference's output buffers: each element's value, ``undef`` where the ISA leaves it free."""
    if ref is None or getattr(ref, "result", None) is None:
        why = getattr(ref, "error", None) or getattr(ref, "skipped", None) or "the reference did not run"
        return f"(no outputs: {why})\n"
    res = ref.result
    out = [f"# undefined: {res.undefined}"] if res.undefined else []
    for name, buf in res.outputs.items():
        vals = buf.values()
        undef = buf.kind != 0
        shown = ["undef" if u else (f"{v:.9g}" if isinstance(v, (float, np.floating)) else str(int(v)))
                 for v, u in zip(vals.tolist(), undef.tolist())]
        out.append(f"{name} ({buf.type}, {buf.count}):")
        out += ["  " + " ".join(shown[i:i + 16]) for i in range(0, len(shown), 16)]
    return "\n".join(out) + "\n"


def _ptxas_said(res: Any) -> str:
    """ptxas's outcome in words: a timeout or a crash is neither an acceptance nor a rejection."""
    if res.timed_out:
        return res.timeout_text()
    if res.returncode < 0:
        return f"ptxas crashed (signal {-res.returncode})"
    return "accepted" if res.accepted else "rejected"


def bundle(path: str | Path, out: str | Path, *, releases: str | None = None, kernel: str | None = None,
           step: Any = None) -> dict:
    """Write the bundle for repro ``path`` into ``out``; returns what was written (``bundle.json``).
    ``releases``: a SPEC for the release matrix (default: the releases cached here).  ``kernel``:
    which kernel of a plain multi-kernel file the inferred header launches (default: the first);
    the SASS hazards and the README's excerpts are that kernel's.  ``step(text)`` is told what
    runs (a progress line).  The directory appears whole or not at all: it is written beside
    ``out`` under a temporary name and renamed at the end (an earlier bundle there is replaced)."""
    path, out = Path(path), Path(out)
    text = read_text(str(path), what="repro file")
    program = launch.load(text, str(path), kernel)  # a plain file's launch inferred and searched
    if out.exists() and not (out.is_dir() and (not any(out.iterdir()) or (out / "bundle.json").exists())):
        raise InputError("exists and is not an earlier bundle: choose another -o", str(out))
    make_dir(out.parent, what="bundle's parent directory")
    try:
        work = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    except OSError as exc:
        raise InputError(f"cannot write the bundle here: {exc.strerror or exc}", str(out)) from None
    try:
        meta = _write(program, text, path, work, releases, kernel, step or (lambda _: None))
        if out.exists():  # an earlier bundle (or an empty directory): moved aside, then removed
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            out.rename(old / "b")
            work.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return meta


def _write(program: Program, text: str, path: Path, out: Path, releases: str | None, kernel: str | None,
           step: Any) -> dict:
    launched = program.launch.kernel
    (out / "repro.ptx").write_text(text)
    signature = program.signature or ""
    tool = disassembler()

    arch = "sm_90a"
    step("ptxas -O3 and its SASS")
    o3, sass3 = _sass_of(text, 3, tool)
    step("ptxas -O0 and its SASS")
    o0, sass0 = _sass_of(text, 0, tool)
    for opt, res, lines in ((3, o3, sass3), (0, o0, sass0)):
        (out / f"ptxas_O{opt}.txt").write_text(res.stderr or (f"({res.timeout_text()})\n" if res.timed_out
                                                              else "(ptxas printed nothing)\n"))
        (out / f"sass_O{opt}.txt").write_text("\n".join(lines) + "\n" if lines else
                                               "(no SASS: " + (_ptxas_said(res) if not res.accepted
                                                               else "no disassembler found") + ")\n")
    step("the SASS hazards")
    hazards = [h.line() for h in sass_hazards(o3.cubin, o3.kernel(launched), tool)] \
        if sass3 and launched in o3.kernel_names else []
    if len(program.module.kernels()) > 1:  # the README shows the launched kernel's SASS
        sass3 = _function_sass(o3, launched, tool) or sass3
        sass0 = _function_sass(o0, launched, tool) or sass0

    step("judging (ptxas, checker, reference" + (", sass)" if tool else ")"))
    v = Executor(("ptxas", "checker", "reference") + (("sass",) if tool else ())).judge(program, text, program)
    found = differ.compare(program, v)
    findings = [f.signature for f in found]
    (out / "reference_outputs.txt").write_text(_outputs_text(v.get("reference")))
    gpu_lines = [f"EXPECT: {j}: {x}" for j, x in program.expect if j in ("hardware", "metamorphic")]
    gpu_lines += [f"NOTE: {n}" for n in program.notes if any(w in n.lower() for w in ("h100", "gpu", "hardware"))]
    if gpu_lines:
        (out / "gpu_outputs.txt").write_text("What the repro records of the GPU:\n" + "\n".join(gpu_lines) + "\n")

    spec = releases or ",".join(cached_releases())
    # what the releases are asked about: the repro's signature, else the first compiler-bug
    # finding judging it gives now (a SASS hazard...), else what ptxas -O3 says of it
    bug = next((f.signature for f in found if classify(f.signature) == COMPILER), None)
    keep = signature or bug or ("ptxas:" + next((d.code for d in o3.diagnostics if d.code), "accepted"))
    rows: dict = {}
    holds: dict = {}
    late: list = []
    if spec:
        found = release_matrix.bisect(program, text, keep, spec, step=step)
        rows, holds, late = found["matrix"], found["holds"], found["timed_out"]
    (out / "releases.txt").write_text(release_matrix.table(rows, None if keep.startswith("ptxas:") else keep) + "\n"
                                      if rows else "(no cached ptxas release)\n")

    choose = f" --kernel {shlex.quote(kernel)}" if kernel else ""
    replay = f"fuzzptx replay repro.ptx{choose} --no-hardware" + (f"  # expect {signature}" if signature else "")
    commands = [
        "#!/bin/sh",
        f"# ptxas {PINNED_VERSION} gave the files here (pip install nvidia-cuda-nvcc=={PINNED_VERSION}: it was "
        f"{find_ptxas()}); another release: PTXAS=/path/to/ptxas sh commands.sh",
        "set -x",
        'PTXAS="${PTXAS:-ptxas}"',
        f'"$PTXAS" -arch={arch} -O3 repro.ptx -o O3.cubin',
        f'"$PTXAS" -arch={arch} -O0 repro.ptx -o O0.cubin',
    ]
    if tool:
        commands += [f"{shlex.join([Path(tool[0]).name] + tool[1:])} O3.cubin > sass_O3.txt",
                     f"{shlex.join([Path(tool[0]).name] + tool[1:])} O0.cubin > sass_O0.txt"]
    commands += ["# with fuzzptx installed: every judge again (drop --no-hardware on a machine with an sm_90a GPU)",
                 replay,
                 f"# which releases have it: fuzzptx bisect repro.ptx --keep {shlex.quote(keep)} --ptxas all"]
    (out / "commands.sh").write_text("\n".join(commands) + "\n")

    meta = {"repro": str(path), "kernel": launched, "signature": signature or None, "asked_of_releases": keep, "class": classify(signature) if signature else None,
            "ptxas": PINNED_VERSION,
            **{f"ptxas_O{opt}": {"accepted": r.accepted, "said": _ptxas_said(r), "timed_out": r.timed_out,
                                 "codes": sorted({d.code for d in r.diagnostics if d.code})} for opt, r in ((3, o3), (0, o0))},
            "sass_hazards_O3": hazards, "findings_now": findings, "verdicts": v.summary(),
            **{k: x for k, x in launch.record_fields(program, v).items() if k != "source"},
            "releases": {r: h for r, h in holds.items() if r not in late}, "releases_timed_out": late,
            "gpu_recorded": gpu_lines,
            "files": sorted(p.name for p in out.iterdir()) + ["README.md", "bundle.json"]}
    (out / "README.md").write_text(_readme(program, meta, sass3, sass0, keep))
    (out / "bundle.json").write_text(json.dumps(meta, indent=1))
    return meta


def _readme(program: Program, m: dict, sass3: list[str], sass0: list[str], keep: str) -> str:
    sig = m["signature"] or (keep if not keep.startswith("ptxas:") else None)
    lines = ["# " + (f"fuzzptx finding: `{sig}`" if sig else "fuzzptx bundle"), ""]
    if sig:
        lines += [f"**Class:** {classify(sig)}." + ("" if m["signature"] else " (The file records no signature: this is "
                                                     "what judging it finds now.)"), ""]
    notes = [n for n in program.notes]
    if m.get("tensor"):
        t = m["tensor"]
        notes.append(f"tensor cores: {t['executed']} of {t['of']} tensor-core instructions executed in the reference"
                     + (" (coverage:none: no judge compared a tensor-core result)" if m.get("notes") else ""))
    if notes:
        lines += ["What the fuzzer recorded:", ""] + [f"- {n}" for n in notes] + [""]
    lines += [
        "## What is in this directory", "",
        "- `repro.ptx`: the minimal PTX. ptxas reads it as it is; the `//` header says how fuzzptx launches it "
        "(grid, block, buffers and their contents).",
        "- `commands.sh`: the commands that reproduce it (ptxas -O3 and -O0, the disassembly, `fuzzptx replay`).",
        "- `ptxas_O3.txt`, `ptxas_O0.txt`: what ptxas printed; `sass_O3.txt`, `sass_O0.txt`: the SASS.",
        "- `releases.txt`: the ptxas releases cached here and whether each has it.",
        "- `reference_outputs.txt`: the output buffers the PTX ISA's semantics give (fuzzptx's reference interpreter)"
        + ("; `gpu_outputs.txt`: what the repro records of the GPU." if m["gpu_recorded"] else "."),
        "",
        f"## ptxas {m['ptxas']}", "",
        f"- `-O3`: {m['ptxas_O3']['said']}"
        + (f", diagnostics {', '.join(m['ptxas_O3']['codes'])}" if m["ptxas_O3"]["codes"] else ""),
        f"- `-O0`: {m['ptxas_O0']['said']}"
        + (f", diagnostics {', '.join(m['ptxas_O0']['codes'])}" if m["ptxas_O0"]["codes"] else ""),
    ]
    if m["sass_hazards_O3"]:
        lines += ["", "At -O3 the SASS breaks the rules of the GMMA pipeline (a register of a GMMA in flight "
                  "written or read, a GMMA reading what was written after `WARPGROUP.ARRIVE`, a wgmma dropped "
                  "or duplicated; the rules: fuzzptx docs/sass.md):", "", "```"] + m["sass_hazards_O3"] + ["```"]
    for opt, s in (("O3", sass3), ("O0", sass0)):
        if s:
            of = f" of kernel `{m['kernel']}`" if len(program.module.kernels()) > 1 else ""
            lines += ["", f"SASS at -{opt}{of}, the lines around the warpgroup instructions ({len(s)} lines; "
                      f"`sass_{opt}.txt` has the whole listing):",
                      "", "```"] + excerpt(s) + ["```"]
    lines += ["", "## Releases", ""]
    if m["releases_timed_out"]:
        lines += [f"Ran out of time (no answer, not a rejection): {', '.join(m['releases_timed_out'])}.", ""]
    if m["releases"]:
        have = [r for r, h in m["releases"].items() if h]
        lines += [f"`{keep}` holds with: {', '.join(have) if have else 'none of them'}; "
                  f"not with: {', '.join(r for r, h in m['releases'].items() if h is False) or 'none'}"
                  + (f"; not applicable: {', '.join(r for r, h in m['releases'].items() if h is None)}"
                     if any(h is None for h in m["releases"].values()) else "") + ".", ""]
    else:
        lines += ["No ptxas release is cached here (see `fuzzptx toolchains`).", ""]
    lines += ["## Judges now", ""] + [f"- {k}: {x}" for k, x in m["verdicts"].items()]
    lines += ["", "Findings when judged again: " + (", ".join(f"`{f}`" for f in m["findings_now"]) or "none") + "."]
    return "\n".join(lines) + "\n"


def main_bundle(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx bundle", description="write one directory a compiler team can act "
                                 "on: the minimal PTX, the commands that reproduce it, the -O0/-O3 SASS, the "
                                 "releases that have it, the reference's (and the recorded GPU's) outputs, a README")
    ap.add_argument("repro", help="a repro file (or any .ptx)")
    ap.add_argument("-o", "--out", required=True, help="the directory to write (created)")
    ap.add_argument("--ptxas", metavar="SPEC", default=None,
                    help="releases for the matrix (default: those cached here; nothing is fetched)")
    ap.add_argument("--kernel", metavar="NAME", default=None,
                    help="plain PTX with several kernels: the one the inferred header launches (default: the first)")
    ap.add_argument("--ptxas-timeout", metavar="SECONDS", type=float, default=None,
                    help=f"seconds each ptxas run may take (default: {BASE_TIMEOUT_S:g} s plus {PER_MB_S:g} s per MB "
                         f"of PTX, or ${TIMEOUT_ENV}); running out of time is said as such, never as a rejection")
    a = ap.parse_args(argv)
    with use_ptxas_timeout(a.ptxas_timeout), Progress("bundle") as ticker:
        # bad input: FuzzptxError, one line from the CLI
        meta = bundle(a.repro, a.out, releases=a.ptxas, kernel=a.kernel, step=ticker.step)
    print(f"wrote {a.out}: " + ", ".join(meta["files"]))
    return 0
