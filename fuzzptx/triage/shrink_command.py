"""``fuzzptx shrink FILE --keep SIGNATURE -o OUT``: reduce a repro file while it keeps a signature.

Here, above both the reducer and the corpus, so that a corpus signature keeps what its entry keeps
(``fuzzptx.triage.corpus.keep_predicate``) while the reducer knows nothing of the corpus.  Writes
only ``-o/--output``.

``--budget`` bounds the whole command's wall time, from before the file is read: reading and
parsing, judging the input once, the passes, and judging the result for its header.  A wall-clock
timer (``SIGALRM``) raises ``OutOfBudget`` into whatever runs when the budget ends (a ptxas batch
on a 10,000-kernel module outlasts any check between judgements); a progress line says what runs
every few seconds."""
from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from dataclasses import replace
from typing import Callable

from fuzzptx.engine.options import keep_signature
from fuzzptx.engine.records import forms_in
from fuzzptx.errors import FuzzptxError
from fuzzptx.helptext import Formatter
from fuzzptx.inputs import output_file
from fuzzptx.oracles import toolchains
from fuzzptx.program import Program, say_inferred
from fuzzptx.reduce import OutOfBudget, instruction_count, shrink
from fuzzptx.triage.corpus import keep_predicate, repro

PROGRESS_SECONDS = 2.0
# notes that describe the program's content, which shrinking changes: regenerated, never carried over
_CONTENT_NOTES = ("form: ", "shrunk from ", "signature changed while shrinking", "signature kept while shrinking",
                  "EXPECT lines not regenerated")


class _Clock:
    """The budget's timer and the progress line: ``phase`` says what runs; a thread prints it when
    nothing else was printed for PROGRESS_SECONDS."""

    def __init__(self, budget: float, out: Callable[[str], None]):
        self.t0, self.budget, self.out = time.monotonic(), budget, out
        self.phase, self.last = "starting", time.monotonic()
        self._stop = threading.Event()
        self._armed = False

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def say(self, text: str) -> None:
        self.last = time.monotonic()
        self.out(f"[{self.elapsed():6.1f} s / {self.budget:g} s] {text}")

    def __enter__(self) -> "_Clock":
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            def ring(signum, frame):
                raise OutOfBudget(f"--budget {self.budget:g} s ran out ({self.phase})")
            self._old = signal.signal(signal.SIGALRM, ring)
            signal.setitimer(signal.ITIMER_REAL, self.budget)
            self._armed = True
        threading.Thread(target=self._tick, daemon=True).start()
        return self

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            if time.monotonic() - self.last >= PROGRESS_SECONDS:
                self.say(f"{self.phase} ...")

    def disarm(self) -> None:
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.disarm()
        if self._armed:
            signal.signal(signal.SIGALRM, self._old)


def regenerated(program: Program, original: Program, keep: str, before: int, seconds: float,
                cut_short: bool, interrupted: bool = False) -> Program:
    """The shrunk program's notes made true again: the ``form:`` notes list the catalogue forms it
    still uses (the input's may be gone), the generator's ``units:`` plan goes once one of its
    units is gone, and one note says how it was shrunk."""
    present = forms_in(program)
    units = next((n for n in program.notes if n.startswith("units: ")), None)
    gone = units is not None and not set(units[len("units: "):].split(", ")) <= present
    kept = tuple(n for n in program.notes if not n.startswith(_CONTENT_NOTES)
                 and not (gone and n.startswith(("units: ", "warpgroups="))))  # a unit the passes removed
    forms = tuple(f"form: {k}" for k in sorted(present))
    how = (f"shrunk from {before} to {instruction_count(program)} instructions in {seconds:.1f} s, keeping {keep}"
           + (" (cut short by --budget)" if cut_short else "") + (" (interrupted)" if interrupted else ""))
    return replace(program, notes=kept + forms + (how, _SIGNATURE_NOTE))


def _unjudged(noted: Program, original: Program, keep: str, why: str) -> Program:
    """The shrunk program written without judging it again: no EXPECT lines, the signature it kept
    (what ``--keep`` named, for a file that came without one), and a note saying why."""
    return stated_signature(replace(noted, expect=(), signature=noted.signature or keep, notes=noted.notes + (
        f"EXPECT lines not regenerated: {why} (fuzzptx replay judges it)",)), original)


_SIGNATURE_NOTE = "signature: "  # one header line either way, so the EXPECT lines' line numbers stay true


def stated_signature(out: Program, original: Program) -> Program:
    """The header says whether the signature survived shrinking; one that changed family is said so,
    never silently.  Fills in the note line ``regenerated`` left (the same one line, so the line
    numbers the EXPECT lines were judged at do not move)."""
    if original.signature and out.signature != original.signature:
        text = f"signature changed while shrinking: {original.signature} -> {out.signature}"
    else:
        text = f"signature kept while shrinking: {out.signature}"
    return replace(out, notes=tuple(text if n == _SIGNATURE_NOTE else n for n in out.notes))


def main_shrink(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx shrink", formatter_class=Formatter,
                                 description="Reduce a repro file (or any PTX file) while it keeps a signature.")
    ap.add_argument("file", help="the repro or PTX file to reduce")
    ap.add_argument("--keep", required=True, help="what must keep holding: ptxas:C7519, ptxas:error, checker!=ptxas, "
                    "reference!=hardware, or a finding signature prefix")
    ap.add_argument("-o", "--output", required=True, help="where the shrunk repro goes (the only file written)")
    ap.add_argument("--budget", type=float, default=60.0,
                    help="seconds of wall time for the whole command: reading, judging the input, the passes and "
                         "the result's header")
    ap.add_argument("--ptxas", metavar="RELEASE", default=None,
                    help="shrink while the signature holds with this ptxas release as the ptxas (a release or a path; "
                         "fetched into the user cache on demand)")
    ap.add_argument("--kernel", metavar="NAME", default=None,
                    help="plain PTX with several kernels: the one the inferred header launches (default: the first)")
    args = ap.parse_args(argv)
    if not args.budget > 0:
        raise FuzzptxError(f"--budget {args.budget}: expected a positive number of seconds")
    keep_signature(args.keep)
    with _Clock(args.budget, print) as clock:
        try:
            return _shrink(args, clock)
        except OutOfBudget as exc:
            print(f"fuzzptx shrink: {exc} after {clock.elapsed():.1f} s: nothing written to {args.output} "
                  "(raise --budget)", file=sys.stderr)
            return 1


def _shrink(args: argparse.Namespace, clock: _Clock) -> int:
    output_file(args.output, what="shrunk repro")
    clock.phase = f"reading and parsing {args.file}"
    program = Program.from_file(args.file, args.kernel)
    say_inferred(program, args.file, "shrink")
    toolchain = None
    if args.ptxas:
        found = toolchains.resolve(args.ptxas)
        if len(found) != 1:
            raise FuzzptxError(f"--ptxas {args.ptxas}: name one release (got {len(found)})")
        toolchain = found[0]
    n = instruction_count(program)
    kernels = sum(1 for f in program.module.functions() if f.kind == "entry")
    clock.say(f"shrinking {args.file}: {kernels} kernel(s), {n} instructions, keep {args.keep}")
    clock.phase = f"judging the input ({n} instructions)"
    last = {"n": n}

    def log(line: str) -> None:
        clock.say(line.strip())
        if ": " in line and line.strip().endswith("instructions"):
            try:
                last["n"] = int(line.rsplit(": ", 1)[1].split()[0])
            except ValueError:
                pass
        clock.phase = f"shrinking ({last['n']} instructions so far)"

    try:
        holds = keep_predicate(args.keep, program, toolchain)
        res = shrink(program, holds, budget_s=max(0.0, args.budget - clock.elapsed()), log=log, interruptible=True)
    except FuzzptxError as exc:
        if exc.file is None:
            raise FuzzptxError(f"{args.keep}: {exc.message}", file=args.file) from None
        raise
    clock.phase = f"judging the result for its header ({res.after} instructions)"
    noted = regenerated(res.program, program, args.keep, res.before, res.seconds, res.cut_short, res.interrupted)
    out = None
    if res.interrupted:  # Ctrl-C: the smallest program so far, written at once (judging it could take minutes)
        out = _unjudged(noted, program, args.keep, "interrupted")
    elif clock.elapsed() < args.budget:  # (the timer rings once: after it rang in the passes, nothing bounds this)
        try:
            out = stated_signature(repro(args.keep, noted), program)
        except OutOfBudget:
            pass
    if out is None:
        # no time left to judge the result: written with the signature it kept and a header that
        # says its EXPECT lines were not regenerated
        # (a file that came without one gets what --keep named: every candidate kept held it)
        out = _unjudged(noted, program, args.keep, "--budget ran out before the result was judged")
        clock.say("budget ran out before the result was judged: written without EXPECT lines")
    clock.disarm()
    with open(args.output, "w") as fh:
        fh.write(out.to_ptx())
    print(f"{'interrupted' if res.interrupted else 'done'}: {res.before} -> {res.after} instructions in "
          f"{clock.elapsed():.1f} s of --budget {args.budget:g} ({res.evaluations} candidates"
          f"{', cut short by the budget' if res.cut_short else ''}); wrote {args.output}")
    for stat in res.passes:
        print(stat.line())
    return 130 if res.interrupted else 0


if __name__ == "__main__":
    sys.exit(main_shrink(sys.argv[1:]))
