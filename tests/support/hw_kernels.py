"""The compiler-made kernels of ``tests/data`` (Triton, CUTLASS, nvcc) on the H100 with their
inferred launches: the GPU against the reference, ptxas -O3 against -O0 on the GPU, and -O3 twice
(a launch whose threads race gives different bytes run to run); the record is
``tests/hw_records/kernels_h100.json``.

Each kernel is read as a user's plain file is (``fuzzptx.launch.load``: the header inferred, the
launch given beside it -- Triton's metadata JSON -- or searched); ptxas compiles the file's own
bytes at -O3 and at -O0; the GPU runs the -O3 cubin twice and the -O0 one once with the same
inputs.  A row says how much of the kernel's tensor cores the reference reached, whether each run
faulted, the elements the GPU gives outside what the reference allows (in its H100 numerics,
``hardware`` mode: the GPU is an H100-class part, and the spec's bounds leave out what its fp8
accumulator keeps, docs/numerics.md; ``spec`` where that mode does not run), the elements where -O3 and
-O0 differ, and those where the two -O3 runs differ (``nondeterministic``).  A kernel whose launch
the reference stopped at what the GPU faults on (an address outside every buffer, a tensor copy
through an address that holds no tensor map, a multicast to a CTA outside the cluster) or that
reaches no tensor core is not launched: the row says so.  CUTLASS's ``GemmUniversal`` kernels are
launched with their ``Params`` as the launch made them: the maps inside it encoded by the worker over
buffers no parameter names (``Arg.hidden``), pointers inside it set to their buffers' device
addresses (``Arg.pointers``).  A launch with a cluster (``cluster=`` on its LAUNCH line: CUTLASS's
two cluster kernels, 2,1,1 and 1,2,1, whose grid is that one cluster) goes through the driver's
``cuLaunchKernelEx`` with the cluster-dimension attribute (``hw_worker.launch_in_clusters``); the
dry run builds that launch's configuration too (``hw_worker.launch_config``), all but the call.  Beside
the kernels (without ``--only``), the two-CTA hand kernels of ``support.cluster_kernels`` (a remote
mbarrier arrive with mapa loads, a multicast tensor copy) run on the GPU against the reference:
``cluster_probes`` in the record.

    # the GPU machine, from the repository's root (the package assembled in /tmp/pkg, as docs/tma.md does)
    mkdir -p /tmp/pkg && cp -r fuzzptx /tmp/pkg/ && rm -rf /tmp/pkg/fuzzptx/strategies /tmp/pkg/fuzzptx/oracles \
      && cp -r strategies oracles /tmp/pkg/fuzzptx/ && R=$PWD && cd /tmp \
      && PYTHONPATH=/tmp/pkg:$R/tests python3 $R/tests/support/hw_kernels.py --jobs 12 --out $OUT/kernels_h100.json
    PYTHONPATH=$PWD:$PWD/tests python3 tests/support/hw_kernels.py --dry-run --out /tmp/kernels.json  # no GPU
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from fuzzptx import launch
from fuzzptx.inputs import read_text
from fuzzptx.oracles.hardware import HardwareUnavailable, program_args
from fuzzptx.oracles.hw_worker import launch_config
from fuzzptx.oracles.ptxas import compile_ptx, ptxas_version
from fuzzptx.oracles.reference import ReferenceError_, compare, run_in_numerics, run_program
from fuzzptx.oracles.reference.values import EXACT, UNDEF
from fuzzptx.program import Program
from support import cluster_kernels
from support.inferred_launches import ROOT, kernel_files


def _differing(a: dict[str, bytes], b: dict[str, bytes], program, ref=None) -> dict[str, int]:
    """Output buffer -> elements whose bytes differ between two GPU runs.  With the reference's
    result ``ref``, each buffer's count is split: ``NAME`` the elements that differ, ``NAME exact``
    those of them the reference gives exactly (neither left free nor a float bound): only these
    say the two builds disagree about something the PTX defines."""
    out = {}
    for buf in program.outputs():
        x, y = a.get(buf.name), b.get(buf.name)
        if x is None or y is None:
            continue
        eb = max(1, len(x) // max(buf.count, 1))
        if len(x) != len(y):
            out[buf.name] = -1
            continue
        differs = np.any(np.frombuffer(x, np.uint8).reshape(-1, eb) != np.frombuffer(y, np.uint8).reshape(-1, eb), axis=1)
        n = int(differs.sum())
        if n:
            out[buf.name] = n
            ob = None if ref is None or ref.undefined else ref.outputs.get(buf.name)
            if ob is not None and ob.kind.size == differs.size:
                out[f"{buf.name} exact"] = int((differs & (ob.kind == EXACT)).sum())
    return out


def _unexplained(diff: dict[str, int] | None) -> int:
    """Elements of a ``_differing`` result the reference gives exactly (all, without a reference)."""
    if not diff:
        return 0
    exact = {k[:-len(" exact")]: v for k, v in diff.items() if k.endswith(" exact")}
    return sum(exact.get(k, v) for k, v in diff.items() if not k.endswith(" exact"))


def prepare(path: Path) -> dict:
    """The kernel's program, text, cubins and reference run (everything but the GPU)."""
    rel = str(path.relative_to(ROOT))
    text = read_text(path, what="PTX file")
    t0 = time.perf_counter()
    program = launch.load(text, rel)
    searched = time.perf_counter() - t0
    # kernel_names as a plain dict: a mapping proxy does not cross back from a pool process
    o3, o0 = (replace(r, kernel_names=dict(r.kernel_names))
              for r in (compile_ptx(text, opt_level=o, want_cubin=True) for o in (3, 0)))
    ref, error, mode = None, None, "hardware"
    try:  # the spec's bounds where the H100 model does not run the program
        ref, mode = run_in_numerics(program, "hardware")
    except ReferenceError_ as exc:
        error = f"{type(exc).__name__}: {exc}"
    reached = launch.trial(program)  # what ran before the reference stopped, if it stopped
    cov = reached.coverage
    # what crosses back from a pool process: the header as text (the IR keeps caches that do not pickle)
    return {"path": rel, "header": list(program.header_lines()), "o3": o3, "o0": o0, "ref": ref, "ref_error": error,
            "numerics": mode,
            "coverage": cov, "search_s": round(searched, 2), "stopped": reached.error,
            # a launch worth the GPU: the reference reached a tensor core in bounds (CUTLASS's Params
            # of repeated words would send it to addresses no one owns)
            "launch_ok": cov.ran > 0 and not _gpu_would_fault(reached.error)}


def _gpu_would_fault(error: str | None) -> bool:
    """The reference stopped where the GPU faults: an address outside every buffer, or a tensor copy
    through a parameter whose bytes are no tensor map (the GPU: illegal instruction)."""
    return bool(error) and (error.startswith("BadAddress") or "is no TENSORMAP parameter" in error)


def _program(k: dict):
    """The kernel's program: its file with the header it was given written on top."""
    text = read_text(k["path"], what="PTX file")
    return Program.from_ptx("".join(f"// {ln}\n" for ln in k["header"]) + text, k["path"])


def _cubin(r, program):
    if not r.accepted or not r.cubin or program.launch.kernel not in r.kernel_names:
        return None, None
    return r.cubin, r.kernel(program.launch.kernel)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="only the kernels whose path contains this")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: ptxas and the reference only")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1), help="processes for the CPU part")
    args = ap.parse_args(argv)
    os.chdir(ROOT)  # the files by their paths in the repository (a JSON beside each is found by it)
    files = [p for p in kernel_files() if args.only in str(p.relative_to(ROOT))]  # not the checkout's own path
    if args.jobs > 1:  # the search, two ptxas runs and the reference per kernel: CPU work, one process each
        with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
            todo = list(pool.map(prepare, files))
    else:
        todo = [prepare(p) for p in files]
    for k in todo:
        k["program"] = _program(k)
    items = []
    for k in todo:
        if not k["launch_ok"]:
            k["not_launched"] = ("the inferred launch reaches no tensor core in the reference" if not k["coverage"].ran
                                 else f"the reference stopped where the GPU faults: {k['stopped'][:160]}")
            continue
        try:
            program_args(k["program"])
        except HardwareUnavailable as exc:
            k["not_launched"] = str(exc)
            continue
        for opt, run in (("o3", "o3"), ("o3", "o3_again"), ("o0", "o0")):
            cubin, name = _cubin(k[opt], k["program"])
            if cubin is not None:
                items.append((k, run, (k["program"], cubin, name)))
    for k, _, (program, _, _) in items:
        la = program.launch
        k["cluster"] = list(la.cluster)
        if la.cluster != (1, 1, 1):  # the configuration cuLaunchKernelEx gets, its layout checked
            launch_config(la.grid, la.block, la.cluster, la.dynamic_smem, 0)
    # the two-CTA hand kernels (support.cluster_kernels): the cluster launch on its own, values only
    probes = [] if args.only else cluster_kernels.probes()
    if args.dry_run:
        hw, info = [None] * (len(items) + len(probes)), {"dry_run": True}
    else:
        from fuzzptx.oracles.hardware import run_programs_on_gpu
        hw, info = run_programs_on_gpu([it for _, _, it in items] + [(p, None, None) for _, p in probes], timeout=60.0)
    hw, probe_hw = hw[:len(items)], hw[len(items):]
    probe_rows = []
    for (name, p), h in zip(probes, probe_hw):
        ref = run_program(p)
        mism = [] if h is None or h.fault else compare(p, ref, h.outputs)
        probe_rows.append({"probe": name, "cluster": list(p.launch.cluster), "reference": ref.undefined or "ran",
                           "gpu": "not run" if h is None else f"fault: {h.fault}" if h.fault else "ran",
                           "mismatches": len(mism), "first": [str(x) for x in mism[:3]]})
    got: dict[tuple[str, str], object] = {(k["path"], opt): h for (k, opt, _), h in zip(items, hw)}
    rows = []
    for k in todo:
        p, ref = k["program"], k["ref"]
        row = {"kernel": k["path"], "header": k["header"], "search_s": k["search_s"], "cluster": k.get("cluster"),
               "tensor": k["coverage"].record(), "coverage": k["coverage"].text(), "numerics": k["numerics"],
               "ptxas_O3": k["o3"].accepted, "ptxas_O0": k["o0"].accepted,
               "reference": k["ref_error"] or (f"undefined: {ref.undefined}" if ref.undefined else "ran"),
               "undefined_elements": 0 if ref is None else sum(int((o.kind == UNDEF).sum()) for o in ref.outputs.values())}
        for opt in ("o3", "o0"):
            h = got.get((k["path"], opt))
            row[f"gpu_{opt}"] = (f"not launched: {k['not_launched']}" if "not_launched" in k else "not run" if h is None
                                 else f"fault: {h.fault}" if h.fault else "ran")
            mism = [] if h is None or h.fault or ref is None else compare(p, ref, h.outputs)
            row[f"mismatches_{opt}"] = len(mism)
            row[f"first_{opt}"] = [str(x) for x in mism[:3]]
        h3, h0 = got.get((k["path"], "o3")), got.get((k["path"], "o0"))
        row["o3_vs_o0"] = (_differing(h3.outputs, h0.outputs, p, ref)
                           if h3 is not None and h0 is not None and not h3.fault and not h0.fault else None)
        again = got.get((k["path"], "o3_again"))
        row["gpu_o3_again"] = "not run" if again is None else f"fault: {again.fault}" if again.fault else "ran"
        row["nondeterministic"] = (_differing(h3.outputs, again.outputs, p, ref)
                                   if h3 is not None and again is not None and not h3.fault and not again.fault else None)
        rows.append(row)
        print(f"{row['kernel']}: {row['coverage']}; reference {row['reference'][:60]}; GPU -O3 {row['gpu_o3']}, "
              f"{row['mismatches_o3']} mismatches; -O0 {row['gpu_o0']}, {row['mismatches_o0']}; "
              f"O3 vs O0 {row['o3_vs_o0']}; O3 twice {row['nondeterministic']}", file=sys.stderr, flush=True)
    ran = sum(r["tensor"]["executed"] for r in rows)
    of = sum(r["tensor"]["of"] for r in rows)
    out = {"what": __doc__.splitlines()[0],
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": "PYTHONPATH=/tmp/pkg:$R/tests python3 $R/tests/support/hw_kernels.py --out $OUT/kernels_h100.json"
                      + (f" --only {args.only}" if args.only else "") + (" --dry-run" if args.dry_run else ""),
           "device": info, "ptxas": str(ptxas_version()), "python": platform.python_version(),
           "kernels": len(rows), "tensor_instructions_executed": ran, "tensor_instructions": of,
           "kernels_reaching_a_tensor_core": sum(1 for r in rows if r["tensor"]["executed"]),
           "rejected_by_ptxas": [r["kernel"] for r in rows if not r["ptxas_O3"] or not r["ptxas_O0"]],
           "reference_errors": sum(1 for r in rows if r["reference"] not in ("ran",) and
                                   not r["reference"].startswith("undefined")),
           "not_launched": [r["kernel"] for r in rows if r["gpu_o3"].startswith("not launched")],
           "launched_in_clusters": [r["kernel"] for r in rows if r["cluster"] and r["cluster"] != [1, 1, 1]],
           "cluster_probes": probe_rows,
           "gpu_faults": sum(1 for r in rows for o in ("o3", "o3_again", "o0") if r[f"gpu_{o}"].startswith("fault")),
           "nondeterministic": [r["kernel"] for r in rows if r["nondeterministic"]],
           "kernels_with_mismatches": sum(1 for r in rows if r["mismatches_o3"] or r["mismatches_o0"]),
           "kernels_where_O3_differs_from_O0": sum(1 for r in rows if r["o3_vs_o0"]),
           # of those, the elements the reference gives exactly: a difference there is unexplained
           "unexplained_O3_vs_O0_elements": sum(_unexplained(r["o3_vs_o0"]) for r in rows),
           "unexplained_nondeterministic_elements": sum(_unexplained(r["nondeterministic"]) for r in rows),
           "rows": rows}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(json.dumps({k: v for k, v in out.items() if k != "rows"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
