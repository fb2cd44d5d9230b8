"""The experiments that taught the ptxas model, as small PTX files with ptxas's answer recorded.

Each file in ``tests/data/checker/`` starts with a lit-style header::

    // EXPERIMENT: acc read between commit and wait
    // PTXAS: info C7517 line 41
    // PTXAS: info C7514
    // MODEL: known-gap <why>          (only where the model still disagrees)

``PTXAS: none`` means ptxas printed nothing; ``PTXAS: error line N`` an error at line N.
``PYTHONPATH=tests python -m support.experiments DIR`` (re)writes the files from ``EXPERIMENTS``
by running the real ptxas; ``recorded(path)``/``observed(result)`` give comparable lists.
"""
from __future__ import annotations

import pathlib
import sys

from fuzzptx.oracles.checker.ptxas_compare import observed

W = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"
FENCE, COMMIT, WAIT = "wgmma.fence.sync.aligned;", "wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;"
WAIT1 = "wgmma.wait_group.sync.aligned 1;"
DIV, UNI = "@%p1", "@%p2"  # %p1 depends on %tid.x, %p2 on %ctaid.x


def wg(i: int = 1, a: str = "%rd1", sd: str = "1", shape: str = "m64n8k16") -> str:
    acc = "{%%f%d,%%f%d,%%f%d,%%f%d}" % (i, i + 1, i + 2, i + 3)
    op = W.replace("m64n8k16", shape)
    if a.startswith("{"):
        return f"{op} {acc}, {a}, %rd2, {sd}, 1, 1, 0;"
    return f"{op} {acc}, {a}, %rd2, {sd}, 1, 1, 0, 0;"


def store(i: int = 1) -> list[str]:
    return [f"st.global.f32 [%rd3+{4 * j}], %f{i + j};" for j in range(4)]


A_REGS = "{%r1,%r2,%r3,%r4}"

PRE = (["ld.param.u64 %rd3, [out];", "ld.global.u64 %rd1, [%rd3+256];", "ld.global.u64 %rd2, [%rd3+264];"]
       + [f"ld.global.f32 %f{i}, [%rd3+{4 * i + 512}];" for i in range(1, 13)]
       + [f"ld.global.u32 %r{i}, [%rd3+{4 * i + 768}];" for i in range(1, 5)]
       + ["mov.u32 %r20, %tid.x;", "setp.lt.u32 %p1, %r20, 64;", "mov.u32 %r21, %ctaid.x;",
          "setp.lt.u32 %p2, %r21, 2;", "ld.global.u32 %r22, [%rd3+900];"])
LOOP_HEAD = ["mov.u32 %r24, 0;", "LOOP:"]
LOOP_TAIL = ["add.u32 %r24, %r24, 1;", "setp.lt.u32 %p4, %r24, %r22;", "@%p4 bra LOOP;"]


def kernel(body: list[str], *, version: str = "8.0", target: str = "sm_90a", extra: str = "",
           pre: list[str] | None = None) -> str:
    lines = [f".version {version}", f".target {target}", ".address_size 64", ""]
    if extra:
        lines += extra.rstrip("\n").split("\n") + [""]
    lines += [".visible .entry k(.param .u64 out)", "{", "\t.reg .f32 %f<40>;", "\t.reg .b64 %rd<16>;",
              "\t.reg .pred %p<8>;", "\t.reg .b32 %r<40>;"]
    for line in (PRE if pre is None else pre) + body + ["ret;"]:
        lines.append(line if line.endswith(":") else "\t" + line)
    return "\n".join(lines + ["}", ""])


def _b(label: str, cond: str) -> str:
    return f"{cond} bra {label};"


FUNC = """.func helper(.param .b32 x)
{
\t.reg .b32 %q<2>;
\tld.param.b32 %q1, [x];
\tret;
}"""
EXTERN = ".extern .func ext(.param .b32 x);"
FUNC_R = """.func (.reg .b32 r) side(.reg .b32 x)
{
\tadd.u32 r, x, 1;
\tret;
}"""
CALL_R = ["call (%r30), side, (%r1);"]
CALL_IND = ["mov.u64 %rd9, side;", "PROTO:", ".callprototype (.reg .b32 _) _ (.reg .b32 _);",
            "call (%r30), %rd9, (%r1), PROTO;"]
KEEP_R30 = ["st.global.u32 [%rd3+64], %r30;"]
CALL = ["{", ".param .b32 arg0;", "st.param.b32 [arg0], %r1;", "call.uni helper, (arg0);", "}"]
CALL_EXT = ["{", ".param .b32 arg0;", "st.param.b32 [arg0], %r1;", "call.uni ext, (arg0);", "}"]

# name -> (description, kernel text)

def wgmma_sections(sections, fence: bool, init: bool) -> str:
    """Straight-line sections, each ``[fence] [mov 0 to its accumulators] wgmma commit wait_group 0
    st.global`` of its first accumulator, no two sharing registers (``sections``: (f32|f16, N) of
    m64nNk16; ``benchmarks/probe_c7512.py`` maps ptxas's C7512 over them)."""
    decls = [".reg .b64 %out;", ".reg .b64 %ad, %bd;"]
    body = ["wgmma.fence.sync.aligned;"] if not fence else []
    for k, (acc, n) in enumerate(sections):
        count = n // 2 if acc == "f32" else n // 4  # f16 accumulators: two per .f16x2 register
        decls.append(f".reg .{'f32' if acc == 'f32' else 'f16x2'} %d{k}_<{count}>;")
        regs = [f"%d{k}_{i}" for i in range(count)]
        body += [f"mov.b32 {r}, 0;" for r in regs] if init else []
        body += ["wgmma.fence.sync.aligned;"] if fence else []
        body.append(f"wgmma.mma_async.sync.aligned.m64n{n}k16.{acc}.f16.f16 {{{', '.join(regs)}}}, %ad, %bd, 1, 1, 1, 0, 0;")
        body += ["wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;", f"st.global.b32 [%out], {regs[0]};"]
    head = [".version 8.4", ".target sm_90a", ".address_size 64", ".visible .entry k()", "{"]
    return "\n".join(head + decls + body + ["ret;", "}", ""])


_ZERO_PRE = ["ld.param.u64 %rd3, [out];", "mov.b64 %rd1, 0;", "mov.b64 %rd2, 0;", "ld.global.u32 %r22, [%rd3+900];",
             "setp.ne.u32 %p3, %r22, 0;"]


def _ZERO(regs) -> list[str]:
    return [f"mov.f32 %f{i}, 0f00000000;" for i in regs]


EXPERIMENTS: dict[str, tuple[str, str]] = {
    "pipe_ok": ("fence, wgmma, commit, wait 0, use: the legal pipeline", kernel([FENCE, wg(), COMMIT, WAIT] + store())),
    "no_fence": ("no wgmma.fence before the first wgmma", kernel([wg(), COMMIT, WAIT] + store())),
    "no_fence_uninit": ("no fence, accumulators never written, scale-d 0",
                        kernel([wg(sd="0"), COMMIT, WAIT] + store(), pre=PRE[:3])),
    "no_wait": ("commit but no wait before the stores", kernel([FENCE, wg(), COMMIT] + store())),
    "no_wait_single_store": ("no wait, one store of one accumulator", kernel([FENCE, wg(), COMMIT, "st.global.f32 [%rd3], %f1;"])),
    "no_wait_store_far": ("no wait, stores to non-adjacent addresses",
                          kernel([FENCE, wg(), COMMIT, "st.global.f32 [%rd3], %f1;", "st.global.f32 [%rd3+64], %f2;"])),
    "no_wait_add": ("no wait, accumulators read by an add first",
                    kernel([FENCE, wg(), COMMIT, "add.f32 %f20, %f3, %f4;", "st.global.f32 [%rd3], %f20;"])),
    "no_commit_wait_use": ("wait without commit, then use (ptxas treats the wait as committing)",
                           kernel([FENCE, wg(), WAIT] + store())),
    "no_commit_no_wait": ("neither commit nor wait before the use", kernel([FENCE, wg()] + store())),
    "no_commit_no_wait_no_use": ("wgmma never committed, never used", kernel([FENCE, wg()])),
    "commit_no_wait_no_use": ("committed, never waited, never used", kernel([FENCE, wg(), COMMIT])),
    "commit_only": ("a commit and nothing else", kernel([COMMIT] + store())),
    "fence_commit_only": ("fence and commit, no wgmma", kernel([FENCE, COMMIT] + store())),
    "second_commit_at_end": ("legal pipeline followed by a stray commit", kernel([FENCE, wg(), COMMIT, WAIT] + store() + [COMMIT])),
    "acc_write_after_fence": ("accumulator written between fence and wgmma",
                              kernel([FENCE, "add.f32 %f1, %f1, %f2;", wg(), COMMIT, WAIT] + store())),
    "acc_zero_after_fence": ("accumulators zeroed between fence and wgmma (what nvcc emits for `float d = 0`)",
                             kernel([FENCE, "mov.f32 %f1, 0f00000000;", "mov.f32 %f2, %f1;", "mov.f32 %f3, %f1;",
                                     "mov.f32 %f4, %f1;", wg(), COMMIT, WAIT] + store())),
    "acc_const_after_fence": ("accumulators set to 1.0 between fence and wgmma",
                              kernel([FENCE, "mov.f32 %f1, 0f3F800000;", "mov.f32 %f2, %f1;", "mov.f32 %f3, %f1;",
                                      "mov.f32 %f4, %f1;", wg(), COMMIT, WAIT] + store())),
    "acc_read_before_commit": ("accumulator read between wgmma and commit",
                               kernel([FENCE, wg(), "add.f32 %f9, %f1, %f1;", COMMIT, WAIT] + store() + ["st.global.f32 [%rd3+64], %f9;"])),
    "acc_read_before_wait": ("accumulator read between commit and wait",
                             kernel([FENCE, wg(), COMMIT, "add.f32 %f9, %f1, %f1;", WAIT] + store() + ["st.global.f32 [%rd3+64], %f9;"])),
    "acc_write_before_commit": ("accumulator overwritten between wgmma and commit",
                                kernel([FENCE, wg(), "add.f32 %f1, %f5, %f6;", COMMIT, WAIT] + store())),
    "acc_rmw_before_commit": ("accumulator read-modify-written between wgmma and commit",
                              kernel([FENCE, wg(), "add.f32 %f1, %f1, %f6;", COMMIT, WAIT] + store())),
    "acc_write_before_wait": ("accumulator overwritten between commit and wait",
                              kernel([FENCE, wg(), COMMIT, "add.f32 %f1, %f5, %f6;", WAIT] + store())),
    "acc_write_between_wgmmas": ("accumulator overwritten between two wgmmas on it",
                                 kernel([FENCE, wg(1), "add.f32 %f1, %f5, %f6;", wg(1), COMMIT, WAIT] + store())),
    "acc_zero_between_wgmmas": ("an accumulator zeroed between two wgmmas on it",
                                kernel([FENCE, wg(1), "mov.f32 %f1, 0f00000000;", wg(1), COMMIT, WAIT] + store())),
    "acc_const_between_wgmmas": ("an accumulator set to 1.0 between two wgmmas on it",
                                 kernel([FENCE, wg(1), "mov.f32 %f1, 0f3F800000;", wg(1), COMMIT, WAIT] + store())),
    "loop_exit_use_no_wait": ("stage in a loop, no wait, accumulators stored right after the loop",
                              kernel(LOOP_HEAD + [FENCE, wg(), COMMIT] + LOOP_TAIL + store())),
    "fence_between_read_second": ("fence W0 fence W1 commit wait 1: ptxas commits W0 at the second fence",
                                  kernel([FENCE, wg(1), FENCE, wg(5), COMMIT, WAIT1] + store(5) + [WAIT] + store(1))),
    "fence_between_read_first": ("fence W0 fence W1 commit wait 1, read W0 (fine for ptxas)",
                                 kernel([FENCE, wg(1), FENCE, wg(5), COMMIT, WAIT1] + store(1) + [WAIT] + store(5))),
    "guarded_use_after_uni_skipped_wait": ("wait skipped on a uniform path, then guarded (divergent) stores",
                                           kernel([FENCE, wg(), COMMIT, _b("L1", UNI), WAIT, "L1:"]
                                                  + [DIV + " " + x for x in store()])),
    "guarded_use_no_wait": ("no wait, stores guarded by a uniform predicate",
                            kernel([FENCE, wg(), COMMIT] + [UNI + " " + x for x in store()])),
    "uncommitted_div_wait_path": ("fence W (no commit), then wait+use under a divergent branch",
                                  kernel([FENCE, wg(), _b("L1", DIV), WAIT] + store() + ["L1:"])),
    "use_wait_commit": ("use before the wait (injected wait), wait 0, then a stray commit",
                        kernel([FENCE, wg(), COMMIT] + store() + [WAIT, COMMIT])),
    "uni_guard_second_wgmma": ("the second wgmma of a stage guarded by a uniform predicate",
                               kernel([FENCE, wg(), f"{UNI} " + wg(), COMMIT, WAIT] + store())),
    "uni_guard_fence_two_wgmmas": ("fence guarded by a uniform predicate, two wgmmas after it",
                                   kernel([f"{UNI} " + FENCE, wg(), wg(), COMMIT, WAIT] + store())),
    "wait1_then_div_use": ("one group, wait 1, then a use under a divergent branch",
                           kernel([FENCE, wg(), COMMIT, WAIT1, _b("L1", DIV)] + store() + ["L1:"])),
    "uncommitted_uni_wait_then_use": ("fence W (no commit), wait 0 under a uniform branch, use after",
                                      kernel([FENCE, wg(), _b("L1", UNI), WAIT, "L1:"] + store())),
    "uni_guard_first_of_two_wgmmas": ("first of two wgmmas guarded by a uniform predicate",
                                      kernel([FENCE, f"{UNI} " + wg(), wg(), COMMIT, WAIT] + store())),
    "uni_commit_in_one_arm": ("fence; commit in one arm of a uniform if-else; then wgmma, wait, use",
                              kernel([FENCE, _b("EL", UNI), COMMIT, "bra END;", "EL:", "END:", wg(), WAIT] + store())),
    "c7511_constant_accumulators": ("constant-initialised accumulators rewritten with a constant between two stages",
                                    kernel([FENCE, wg(1), COMMIT, WAIT, "mov.f32 %f1, 0f3F800000;", wg(1), COMMIT, WAIT]
                                           + store(1), pre=["ld.param.u64 %rd3, [out];", "mov.b64 %rd1, 0;",
                                                            "mov.b64 %rd2, 0;"]
                                           + [f"mov.f32 %f{i}, 0f00000000;" for i in range(1, 9)])),
    # a wgmma whose C is all zero needs no C: ptxas treats it as scale-d 0 (seen in a shrunk
    # campaign finding: 77 of 88 accumulators zeroed, scale-d a predicate)
    "c7511_zero_c_predicate_scale_d": ("accumulators zeroed, a wgmma with a run-time scale-d, one accumulator "
                                       "zeroed again, a wgmma reading them: C7511",
                                       kernel([FENCE, wg(1, sd="%p3"), COMMIT, WAIT, "mov.f32 %f1, 0f00000000;",
                                               wg(1), COMMIT, WAIT] + store(1), pre=_ZERO_PRE + _ZERO(range(1, 5)))),
    "c7511_zero_c_loaded": ("the same with the accumulators loaded, not zeroed: no C7511",
                            kernel([FENCE, wg(1, sd="%p3"), COMMIT, WAIT, "mov.f32 %f1, 0f00000000;", wg(1), COMMIT,
                                    WAIT] + store(1), pre=_ZERO_PRE + [f"ld.global.f32 %f{i}, [%rd3+{512 + 4 * i}];"
                                                                       for i in range(1, 5)])),
    "c7511_zero_c_uninitialised_later_zeroed": ("three accumulators zeroed, one uninitialised and zeroed only after "
                                                "the first wgmma: no C7511",
                                                kernel([FENCE, wg(1, sd="%p3"), COMMIT, WAIT,
                                                        "mov.f32 %f4, 0f00000000;", wg(1), COMMIT, WAIT] + store(1),
                                                       pre=_ZERO_PRE + _ZERO(range(1, 4)))),
    "a_written_after_fence": ("A-fragment register written between fence and wgmma",
                              kernel([FENCE, "add.u32 %r1, %r1, 7;", wg(a=A_REGS), COMMIT, WAIT] + store())),
    "a_written_after_wgmma": ("A-fragment register written while the wgmma is in flight",
                              kernel([FENCE, wg(a=A_REGS), "add.u32 %r1, %r1, 7;", COMMIT, WAIT] + store() + ["st.global.u32 [%rd3+32], %r1;"])),
    "a_written_between_wgmmas": ("A-fragment register written between two wgmmas reading it",
                                 kernel([FENCE, wg(1, a=A_REGS), "add.u32 %r1, %r1, 7;", wg(5, a=A_REGS), COMMIT, WAIT] + store(1) + store(5))),
    "desc_written_after_fence": ("descriptor written between fence and wgmma",
                                 kernel([FENCE, "add.s64 %rd1, %rd1, 16;", wg(), COMMIT, WAIT] + store())),
    "desc_written_between_wgmmas": ("descriptor redefined between two wgmmas of one stage",
                                    kernel([FENCE, wg(1), "add.s64 %rd1, %rd1, 2;", wg(5), COMMIT, WAIT] + store(1) + store(5))),
    "wgmma_after_wait_read": ("second wgmma without fence after the first result was stored",
                              kernel([FENCE, wg(1), COMMIT, WAIT] + store(1) + [wg(1), COMMIT, WAIT] + store(1))),
    "wgmma_after_wait_write": ("second wgmma without fence after the accumulator was updated",
                               kernel([FENCE, wg(1), COMMIT, WAIT, "add.f32 %f1, %f1, %f5;", wg(1), COMMIT, WAIT] + store(1))),
    "wait1_one_group": ("wait_group 1 with one group, then use", kernel([FENCE, wg(1), COMMIT, WAIT1] + store(1))),
    "wait1_two_groups_first": ("two groups, wait 1, use the first",
                               kernel([FENCE, wg(1), COMMIT, wg(5), COMMIT, WAIT1] + store(1) + [WAIT] + store(5))),
    "wait1_two_groups_second": ("two groups, wait 1, use the second",
                                kernel([FENCE, wg(1), COMMIT, wg(5), COMMIT, WAIT1] + store(5) + [WAIT] + store(1))),
    "wait1_uncommitted_second": ("W0 commit W1 wait 1: ptxas commits W1 implicitly",
                                 kernel([FENCE, wg(1), COMMIT, wg(5), WAIT1] + store(1) + [COMMIT, WAIT] + store(5))),
    "wait8": ("wait_group 8 (catalogue: 0..7) is accepted", kernel([FENCE, wg(), COMMIT, "wgmma.wait_group.sync.aligned 8;"] + store())),
    "div_branch_pipeline": ("whole pipeline under a %tid-dependent branch",
                            kernel([_b("L1", DIV), FENCE, wg(), COMMIT, WAIT] + store() + ["L1:"])),
    "div_branch_wgmma": ("only the wgmma under a divergent branch", kernel([FENCE, _b("L1", DIV), wg(), "L1:", COMMIT, WAIT] + store())),
    "uni_branch_wgmma": ("only the wgmma under a uniform branch", kernel([FENCE, _b("L1", UNI), wg(), "L1:", COMMIT, WAIT] + store())),
    "div_branch_fence": ("the fence under a divergent branch", kernel([_b("L1", DIV), FENCE, "L1:", wg(), COMMIT, WAIT] + store())),
    "uni_branch_fence": ("the fence under a uniform branch", kernel([_b("L1", UNI), FENCE, "L1:", wg(), COMMIT, WAIT] + store())),
    "div_branch_commit": ("the commit under a divergent branch", kernel([FENCE, wg(), _b("L1", DIV), COMMIT, "L1:", WAIT] + store())),
    "div_branch_wait": ("the wait under a divergent branch, use after", kernel([FENCE, wg(), COMMIT, _b("L1", DIV), WAIT, "L1:"] + store())),
    "uni_branch_wait": ("the wait under a uniform branch, use after", kernel([FENCE, wg(), COMMIT, _b("L1", UNI), WAIT, "L1:"] + store())),
    "div_branch_wait_no_use": ("the wait under a divergent branch, nothing after", kernel([FENCE, wg(1), COMMIT, _b("L1", DIV), WAIT, "L1:"])),
    "uni_branch_wait_no_use": ("the wait under a uniform branch, nothing after", kernel([FENCE, wg(1), COMMIT, _b("L1", UNI), WAIT, "L1:"])),
    "div_branch_use_before_wait": ("a use before the wait, under a divergent branch",
                                   kernel([FENCE, wg(), COMMIT, _b("L1", DIV)] + store() + ["L1:", WAIT])),
    "div_guard_wgmma": ("wgmma guarded by a divergent predicate", kernel([FENCE, f"{DIV} " + wg(), COMMIT, WAIT] + store())),
    "uni_guard_wgmma": ("wgmma guarded by a %ctaid predicate", kernel([FENCE, f"{UNI} " + wg(), COMMIT, WAIT] + store())),
    "param_guard_wgmma": ("wgmma guarded by a predicate from a loaded value",
                          kernel(["setp.ne.u32 %p3, %r22, 0;", FENCE, "@%p3 " + wg(), COMMIT, WAIT] + store())),
    "div_guard_fence": ("fence guarded by a divergent predicate", kernel([f"{DIV} " + FENCE, wg(), COMMIT, WAIT] + store())),
    "uni_guard_fence": ("fence guarded by a uniform predicate", kernel([f"{UNI} " + FENCE, wg(), COMMIT, WAIT] + store())),
    "div_guard_commit": ("commit guarded by a divergent predicate", kernel([FENCE, wg(), f"{DIV} " + COMMIT, WAIT] + store())),
    "uni_guard_commit": ("commit guarded by a uniform predicate", kernel([FENCE, wg(), f"{UNI} " + COMMIT, WAIT] + store())),
    "div_guard_wait": ("wait guarded by a divergent predicate, use after", kernel([FENCE, wg(), COMMIT, f"{DIV} " + WAIT] + store())),
    "uni_guard_wait": ("wait guarded by a uniform predicate, use after", kernel([FENCE, wg(), COMMIT, f"{UNI} " + WAIT] + store())),
    "div_guard_wait_no_use": ("wait guarded by a divergent predicate, nothing after", kernel([FENCE, wg(), COMMIT, f"{DIV} " + WAIT])),
    "uni_ifelse_wgmma": ("a wgmma in each arm of a uniform if-else, commit after",
                         kernel([FENCE, _b("EL", UNI), wg(), "bra END;", "EL:", wg(), "END:", COMMIT, WAIT] + store())),
    "uni_ifelse_stages": ("a whole stage in each arm of a uniform if-else",
                          kernel([_b("EL", UNI), FENCE, wg(), COMMIT, "bra END;", "EL:", FENCE, wg(), COMMIT, "END:", WAIT] + store())),
    "div_pipeline_then_commit": ("pipeline under a divergent branch, then a commit after it",
                                 kernel([_b("L1", DIV), FENCE, wg(1), COMMIT, WAIT] + store() + ["L1:", COMMIT])),
    "div_pipeline_then_fence": ("pipeline under a divergent branch, then a fence after it",
                                kernel([_b("L1", DIV), FENCE, wg(1), COMMIT, WAIT] + store() + ["L1:", FENCE])),
    "div_commit_after_pipeline": ("legal pipeline, then a commit under a divergent branch",
                                  kernel([FENCE, wg(1), COMMIT, WAIT] + store() + [_b("L1", DIV), COMMIT, "L1:"])),
    "uni_commit_after_pipeline": ("legal pipeline, then a commit under a uniform branch",
                                  kernel([FENCE, wg(1), COMMIT, WAIT] + store() + [_b("L1", UNI), COMMIT, "L1:"])),
    "fence_branch_wgmma": ("fence; unconditional branch; wgmma", kernel([FENCE, "bra L1;", "L1:", wg(), COMMIT, WAIT] + store())),
    "wgmma_branch_commit": ("fence; wgmma; uniform branch over an add; commit",
                            kernel([FENCE, wg(), _b("L1", UNI), "add.u32 %r23, %r22, 1;", "L1:", COMMIT, WAIT] + store() + ["st.global.u32 [%rd3], %r23;"])),
    "loop_pipeline": ("fence/wgmma/commit/wait 0 inside a uniform loop",
                      kernel(LOOP_HEAD + [FENCE, wg(), COMMIT, WAIT] + LOOP_TAIL + store())),
    "loop_fence_outside": ("fence before a loop of wgmma/commit/wait",
                           kernel([FENCE] + LOOP_HEAD + [wg(), COMMIT, WAIT] + LOOP_TAIL + store())),
    "loop_wait1": ("pipelined loop: wait 1 inside, wait 0 after",
                   kernel(LOOP_HEAD + [FENCE, wg(), COMMIT, WAIT1] + LOOP_TAIL + [WAIT] + store())),
    "loop_no_wait": ("loop without wait, wait 0 after", kernel(LOOP_HEAD + [FENCE, wg(), COMMIT] + LOOP_TAIL + [WAIT] + store())),
    "loop_no_fence": ("loop with no fence at all", kernel(LOOP_HEAD + [wg(), COMMIT, WAIT] + LOOP_TAIL + store())),
    "call_in_stage": ("a call to a .func between wgmma and commit",
                      kernel([FENCE, wg()] + CALL + [COMMIT, WAIT] + store(), extra=FUNC)),
    "extern_call_in_stage": ("a call to an extern .func between wgmma and commit",
                             kernel([FENCE, wg()] + CALL_EXT + [COMMIT, WAIT] + store(), extra=EXTERN)),
    "call_before_wgmma": ("a direct call between fence and wgmma",
                          kernel([FENCE] + CALL_R + [wg(), COMMIT, WAIT] + store() + KEEP_R30, extra=FUNC_R)),
    "call_before_commit": ("a direct call between wgmma and commit",
                           kernel([FENCE, wg()] + CALL_R + [COMMIT, WAIT] + store() + KEEP_R30, extra=FUNC_R)),
    "call_before_wait": ("a direct call between commit and wait",
                         kernel([FENCE, wg(), COMMIT] + CALL_R + [WAIT] + store() + KEEP_R30, extra=FUNC_R)),
    "indirect_call_before_fence": ("an indirect call before the pipeline",
                                   kernel(CALL_IND + [FENCE, wg(), COMMIT, WAIT] + store() + KEEP_R30, extra=FUNC_R)),
    "indirect_call_before_commit": ("an indirect call between wgmma and commit",
                                    kernel([FENCE, wg()] + CALL_IND + [COMMIT, WAIT] + store() + KEEP_R30, extra=FUNC_R)),
    "indirect_call_before_wait": ("an indirect call between commit and wait",
                                  kernel([FENCE, wg(), COMMIT] + CALL_IND + [WAIT] + store() + KEEP_R30, extra=FUNC_R)),
    "indirect_call_after_wait": ("an indirect call after the pipeline",
                                 kernel([FENCE, wg(), COMMIT, WAIT] + CALL_IND + store() + KEEP_R30, extra=FUNC_R)),
    "extern_call_before_wait": ("a call to an undefined extern .func between commit and wait",
                                kernel([FENCE, wg(), COMMIT] + CALL_EXT + [WAIT] + store(), extra=EXTERN)),
    "call_after_pipeline": ("a call after the pipeline", kernel([FENCE, wg(), COMMIT, WAIT] + store() + CALL, extra=FUNC)),
    "isa_bad_shape": ("shape m64n12k16 does not exist", kernel([FENCE, wg().replace("m64n8k16", "m64n12k16"), COMMIT, WAIT] + store())),
    "isa_scale_d_2": ("scale-d immediate 2", kernel([FENCE, wg(sd="2"), COMMIT, WAIT] + store())),
    "isa_scale_a_2": ("imm-scale-a 2", kernel([FENCE, wg().replace(", 1, 1, 1, 0, 0;", ", 1, 2, 1, 0, 0;"), COMMIT, WAIT] + store())),
    "isa_trans_2": ("imm-trans-a 2", kernel([FENCE, wg().replace(", 1, 1, 1, 0, 0;", ", 1, 1, 1, 2, 0;"), COMMIT, WAIT] + store())),
    "isa_vector_size": ("3 accumulator registers where 4 are needed",
                        kernel([FENCE, wg().replace("%f1,%f2,%f3,%f4", "%f1,%f2,%f3"), COMMIT, WAIT] + store())),
    "isa_acc_b32": ("accumulators in .b32 registers (accepted)",
                    kernel([FENCE, wg().replace("%f1,%f2,%f3,%f4", "%r1,%r2,%r3,%r4"), COMMIT, WAIT])),
    "isa_desc_b32": ("a 32-bit descriptor register", kernel([FENCE, wg(a="%r5"), COMMIT, WAIT] + store())),
    "isa_type_mix": ("f16 A with bf16 B", kernel([FENCE, wg().replace("f32.f16.f16", "f32.f16.bf16"), COMMIT, WAIT] + store())),
    "isa_no_aligned": ("wgmma without .aligned (accepted)", kernel([FENCE, wg().replace("sync.aligned", "sync"), COMMIT, WAIT] + store())),
    "isa_operand_count": ("one operand too many", kernel([FENCE, wg().replace(", 0, 0;", ", 0, 0, 0;"), COMMIT, WAIT] + store())),
    "isa_wait_reg": ("wait_group with a register operand", kernel([FENCE, wg(), COMMIT, "wgmma.wait_group.sync.aligned %r1;"] + store())),
    "isa_target_sm90": (".target sm_90 (no a)", kernel([FENCE, wg(), COMMIT, WAIT] + store(), target="sm_90")),
    "isa_version_7_8": (".version 7.8 with .target sm_90a and fence.proxy.async",
                        kernel(["fence.proxy.async.shared::cta;", FENCE, wg(), COMMIT, WAIT] + store(), version="7.8")),
    "isa_two_errors": ("two bad immediates on two lines", kernel([FENCE, wg(sd="2"), wg(sd="3"), COMMIT, WAIT] + store())),
}


# ------------------------------------------------------------------ learned by helper checker2
ADDR_SUM = ["mul.wide.u32 %rd5, %r20, 16;", "add.u64 %rd6, %rd3, %rd5;"]
ST_SUM = [f"st.global.b32 [%rd6+{4 * j}], %f{1 + j};" for j in range(4)]
ZERO = lambda i: f"mov.f32 %f{i}, 0f00000000;"  # noqa: E731
PRE_ZERO_ACC = PRE[:3] + [ZERO(i) for i in range(1, 13)] + PRE[15:]
EXT_R = ".extern .func (.reg .b32 r) xside(.reg .b32 x);"
EXPERIMENTS.update({
    "no_wait_store_reg_sum": ("no wait, stores to base + per-thread offset (a register sum): wait at the first store",
                              kernel([FENCE, wg(), COMMIT] + ADDR_SUM + ST_SUM)),
    "no_wait_after_call": ("no wait, a direct call between commit and the stores: the wait is reported at the call",
                           kernel([FENCE, wg(), COMMIT] + CALL_R + ADDR_SUM + ST_SUM + KEEP_R30, extra=FUNC_R)),
    "no_wait_after_indirect_call": ("no wait, an indirect call between commit and the stores",
                                    kernel([FENCE, wg(), COMMIT] + CALL_IND + ADDR_SUM + ST_SUM + KEEP_R30, extra=FUNC_R)),
    "call_after_commit_no_use": ("committed, a direct call, never waited nor used: the wait is reported at the call",
                                 kernel([FENCE, wg(), COMMIT] + CALL_R + KEEP_R30, extra=FUNC_R)),
    "call_between_stages": ("a direct call between a committed group and the next fence: nothing",
                            kernel([FENCE, wg(1), COMMIT] + CALL_R + [FENCE, wg(1), COMMIT, WAIT] + store(1) + KEEP_R30,
                                   extra=FUNC_R)),
    "no_wait_loop_before_use": ("no wait, a loop without wgmma between commit and use: wait at the end of the commit's block",
                                kernel([FENCE, wg(), COMMIT] + LOOP_HEAD + LOOP_TAIL + ADDR_SUM + ST_SUM)),
    "no_wait_div_diamonds_before_use": ("no wait, two divergent if-blocks between commit and use: wait at the first branch",
                                        kernel([FENCE, wg(), COMMIT, _b("D1", DIV), "add.u32 %r25, %r25, 1;", "D1:",
                                                _b("D2", DIV), "add.u32 %r25, %r25, 3;", "D2:"] + ADDR_SUM + ST_SUM
                                               + ["st.global.u32 [%rd3+64], %r25;"])),
    "dead_wgmma_no_fence": ("no fence; wgmma, then a scale-d 0 wgmma on the same accumulators: arrive at the second",
                            kernel([wg(sd="1"), wg(sd="0"), COMMIT, WAIT] + store(), pre=PRE_ZERO_ACC)),
    "dead_wgmmas_no_fence_three": ("no fence; wgmmas with scale-d 0, 1, 0 on the same accumulators: arrive at the third",
                                   kernel([wg(sd="0"), wg(sd="1"), wg(sd="0"), COMMIT, WAIT] + store(), pre=PRE_ZERO_ACC)),
    "acc_zero_in_flight_then_wgmma": ("accumulator of an in-flight wgmma zeroed, then a wgmma on others",
                                      kernel([FENCE, wg(1), ZERO(1), wg(5), COMMIT, WAIT] + store(1) + store(5))),
    "acc_zero_in_flight_then_commit": ("accumulator of an in-flight wgmma zeroed, then commit (loaded accumulators)",
                                       kernel([FENCE, wg(1), ZERO(1), COMMIT, WAIT] + store(1))),
    "acc_zero_in_flight_zero_init": ("the same with zero-initialised accumulators: nothing",
                                     kernel([FENCE, wg(1), ZERO(1), COMMIT, WAIT] + store(1), pre=PRE_ZERO_ACC)),
    "acc_zero_in_flight_unused": ("accumulator of an in-flight wgmma zeroed and never read again: nothing",
                                  kernel([FENCE, wg(1), ZERO(1), COMMIT, WAIT] + store(5))),
    "later_acc_read_in_flight": ("a later wgmma's accumulator input read while a group is in flight: wait at the read",
                                 kernel([FENCE, wg(1), COMMIT, "add.f32 %f20, %f9, %f10;", WAIT, FENCE, wg(9), COMMIT, WAIT]
                                        + store(1) + store(9) + ["st.global.f32 [%rd3+200], %f20;"])),
    "earlier_acc_read_in_flight": ("an earlier (waited) wgmma's accumulator read while another group is in flight",
                                   kernel([FENCE, wg(9), COMMIT, WAIT, FENCE, wg(1), COMMIT, "add.f32 %f20, %f9, %f10;", WAIT]
                                          + store(1) + store(9) + ["st.global.f32 [%rd3+200], %f20;"])),
    "later_acc_rmw_on_waiting_path": ("a later wgmma's accumulator negated on the path that waits, the other skips the wait",
                                      kernel([FENCE, wg(1), COMMIT, _b("SK", UNI), "xor.b32 %f5, %f5, 0x80000000;", WAIT,
                                              "SK:"] + CALL_R + [FENCE, wg(5), COMMIT, WAIT] + store(1) + store(5) + KEEP_R30,
                                             extra=FUNC_R)),
    "later_acc_rmw_fed_next": ("a later wgmma's accumulator negated right before that wgmma, a group in flight: nothing",
                               kernel([FENCE, wg(1), COMMIT, "xor.b32 %f5, %f5, 0x80000000;", FENCE, wg(5), COMMIT, WAIT]
                                      + store(1) + store(5))),
    "indirect_call_then_acc_write": ("an indirect call serialises: the accumulator rewrite in a stage draws no arrive",
                                     kernel(CALL_IND + [FENCE, wg(1), wg(5), "add.f32 %f5, %f6, %f7;", wg(1), COMMIT, WAIT]
                                            + store(1) + store(5) + KEEP_R30, extra=FUNC_R)),
    "extern_address_taken": ("the address of an extern .func taken for an indirect call: an error (no C7509)",
                             kernel([FENCE, wg(), COMMIT, "mov.u64 %rd9, xside;", "PROTO:",
                                     ".callprototype (.reg .b32 _) _ (.reg .b32 _);", "call (%r30), %rd9, (%r1), PROTO;",
                                     WAIT] + store() + KEEP_R30, extra=EXT_R)),
    "direct_then_indirect_call": ("a direct call, then an indirect call to the same .func: C7509 (\"Extern calls\")",
                                  kernel([FENCE, wg(), COMMIT] + CALL_R + [WAIT] + CALL_IND + store() + KEEP_R30, extra=FUNC_R)),
    "indirect_then_direct_call": ("an indirect call, then a direct call: C7510",
                                  kernel([FENCE, wg(), COMMIT] + CALL_IND + [WAIT] + CALL_R + store() + KEEP_R30, extra=FUNC_R)),
    "indirect_direct_indirect_call": ("an indirect call, a direct call, then an indirect call through the direct call's "
                                      "target: C7510 (the first call's code; a README fuzz-run finding)",
                                      kernel([FENCE, wg(), COMMIT] + CALL_IND + [WAIT] + CALL_R
                                             + [x.replace("%rd9", "%rd10").replace("PROTO", "PROTO2") for x in CALL_IND]
                                             + store() + KEEP_R30, extra=FUNC_R)),
    # an empty commit group before a divergent stage (a README fuzz-run finding, shrunk)
    "empty_commit_divergent_stage": ("an empty commit group, then a stage skipped by a divergent branch: C7519 at the commit, C7517 at the branch",
                                     kernel([COMMIT, _b("L2", DIV), FENCE, wg(), "L2:"])),
    "empty_commit_divergent_stage_then_store": (
        "the same with an unrelated store after the merge: C7519, C7518 (not C7517)",
        kernel([COMMIT, _b("L2", DIV), FENCE, wg(), "L2:", "st.global.u32 [%rd3+64], %r22;"])),
    "empty_commit_divergent_stage_then_acc_store": (
        "the same with the accumulators stored after the merge: C7519, C7518",
        kernel([COMMIT, _b("L2", DIV), FENCE, wg(), "L2:"] + store())),
    "c7512_equal_sections": ("two fenced f32 m64n248 sections, accumulators set first, 248 registers in all: "
                             "C7512 (m64n256 + m64n248 compiles clean; benchmarks/probe_c7512.py --grid)",
                             wgmma_sections((("f32", 248), ("f32", 248)), True, True)),
    "acc_read_mid_pipeline_scale_d_0": (
        "a scale-d 0 wgmma, an add reading its accumulator (in flight, uncommitted), a wgmma reading it: ptxas waits at "
        "the add and arrives at the wgmma (C7517, C7519), no serialisation (issue 40's hand-made miss)",
        kernel([FENCE, wg(sd="0"), "add.f32 %f1, %f1, 0f3F800000;", wg(), COMMIT, WAIT, *store()])),
    "a_move_between_wgmmas_const": (
        "mov of a constant into an A register between two wgmmas reading it: nothing (a copy ptxas propagates; "
        "issue 40's hand-made miss)",
        kernel([FENCE, wg(a=A_REGS), "mov.b32 %r1, 5;", wg(5, a=A_REGS), COMMIT, WAIT, *store(), *store(5)])),
    "a_move_between_wgmmas_reg": (
        "mov of another register into an A register between two wgmmas reading it: nothing",
        kernel([FENCE, wg(a=A_REGS), "mov.b32 %r1, %r5;", wg(5, a=A_REGS), COMMIT, WAIT, *store(), *store(5)])),
    "a_move_between_wgmmas_next_stage": (
        "mov of a constant into an A register of the wgmma in flight, read by the next stage's wgmma: nothing",
        kernel([FENCE, wg(a=A_REGS), "mov.b32 %r1, 5;", wg(5), COMMIT, FENCE, wg(9, a=A_REGS), COMMIT, WAIT, *store(),
                *store(5), *store(9)])),
    "a_move_in_loop": (
        "the same move in a loop, the wgmma reading it next iteration: C7513 and the arrive at the next wgmma",
        kernel([*LOOP_HEAD, FENCE, wg(a=A_REGS), "mov.b32 %r1, 5;", wg(5), COMMIT, *LOOP_TAIL, WAIT, *store(), *store(5)])),
    "c7512_footprint_208": ("four fenced f32 m64n104 sections, set first: accumulators of 208 registers in all, "
                            "below ptxas_pressure.C7512_MAY_FROM: nothing (benchmarks/results/probe_c7512.json: never "
                            "below 232)", wgmma_sections((("f32", 104),) * 4, True, True)),
    "c7512_footprint_624": ("six fenced f32 m64n208 sections, set first: 624 registers, from ptxas_pressure.C7512_FROM: "
                            "C7512 (probe_c7512.json: every equal-section kernel from 408 up)",
                            wgmma_sections((("f32", 208),) * 6, True, True)),
    "dead_divergent_stage": ("a stage under a divergent branch whose wgmma the next (scale-d 0) wgmma overwrites: nothing",
                             kernel([_b("SK", DIV), FENCE, wg(sd="0"), COMMIT, "SK:", FENCE, wg(sd="0"), COMMIT, WAIT]
                                    + store())),
    "tid_register_shadow": ("a kernel declares a scalar register %tid: `%tid.x` is then an unknown video selector",
                            kernel([FENCE, wg(), COMMIT, WAIT] + store(), pre=[".reg .b32 %tid;"] + PRE)),
    "tid_vector_register": ("a kernel declares a vector register %tid: `%tid.x` is its element (accepted)",
                            kernel([FENCE, wg(), COMMIT, WAIT] + store(), pre=[".reg .v4 .b32 %tid;"] + PRE)),
    "laneid_register_shadow": ("a kernel declares a register %laneid and reads it (accepted)",
                               kernel([FENCE, wg(), COMMIT, WAIT] + store(), pre=[".reg .b32 %laneid;", "mov.u32 %r25, %laneid;"] + PRE)),
})

from .experiments_dce import more  # noqa: E402 (it builds on the helpers above)
from .experiments_blocks import more as more_blocks  # noqa: E402
from .experiments_div import more as more_div  # noqa: E402
from .experiments_split import more as more_split  # noqa: E402
from .experiments_exit import more as more_exit  # noqa: E402
from .experiments_entry import more as more_entry  # noqa: E402
from .experiments_inflight import more as more_inflight  # noqa: E402
from .experiments_bra_uni import more as more_bra_uni  # noqa: E402

EXPERIMENTS.update(more())
EXPERIMENTS.update(more_blocks())
EXPERIMENTS.update(more_div())
EXPERIMENTS.update(more_split())
EXPERIMENTS.update(more_exit())
EXPERIMENTS.update(more_entry())
EXPERIMENTS.update(more_inflight())
EXPERIMENTS.update(more_bra_uni())


def _branch_on(src: list[str], bra: str = "bra") -> str:
    """A wgmma skipped by a branch on %r30 computed by ``src``: C7520 if ptxas thinks it divergent."""
    return kernel(src + ["setp.eq.u32 %p5, %r30, 0;", FENCE, f"@%p5 {bra} L1;", wg(), "L1:", COMMIT, WAIT] + store())


UNIFORMITY_PROBES = {
    "tid_x": (["mov.u32 %r30, %tid.x;"], "bra"),
    "tid_y": (["mov.u32 %r30, %tid.y;"], "bra"),
    "laneid": (["mov.u32 %r30, %laneid;"], "bra"),
    "warpid": (["mov.u32 %r30, %warpid;"], "bra"),
    "tid_shr7": (["mov.u32 %r31, %tid.x;", "shr.u32 %r30, %r31, 7;"], "bra"),
    "tid_div128": (["mov.u32 %r31, %tid.x;", "div.u32 %r30, %r31, 128;"], "bra"),
    "clock": (["mov.u32 %r30, %clock;"], "bra"),
    "load_uniform_addr": (["ld.global.u32 %r30, [%rd3+1000];"], "bra"),
    "load_tid_addr": (["mov.u32 %r31, %tid.x;", "mul.wide.u32 %rd9, %r31, 4;", "add.s64 %rd10, %rd3, %rd9;",
                       "ld.global.u32 %r30, [%rd10];"], "bra"),
    "shfl_broadcast": (["mov.u32 %r31, %tid.x;", "shr.u32 %r32, %r31, 7;", "shfl.sync.idx.b32 %r30, %r32, 0, 31, -1;"], "bra"),
    "tid_x_bra_uni": (["mov.u32 %r30, %tid.x;"], "bra.uni"),
}
for _name, (_src, _bra) in UNIFORMITY_PROBES.items():
    EXPERIMENTS[f"uniform_{_name}"] = (f"wgmma skipped by a {_bra} on a value from: {' '.join(_src)}",
                                       _branch_on(_src, _bra))


# ------------------------------------------------------------------ recording and reading


def header(text: str, key: str) -> list[str]:
    out = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        body = line[2:].strip()
        if body.startswith(key + ":"):
            out.append(body[len(key) + 1:].strip())
    return out


def recorded(path) -> list[str]:
    return sorted(header(pathlib.Path(path).read_text(), "PTXAS")) or ["none"]


def record(directory, names=None) -> list[pathlib.Path]:
    """Run ptxas on each experiment and write ``DIR/NAME.ptx`` with the header (keeps MODEL lines).

    The header shifts the kernel's lines, so ptxas runs on the final text until the header is stable.
    """
    from fuzzptx.oracles.ptxas import compile_ptx

    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (desc, text) in EXPERIMENTS.items():
        if names and name not in names:
            continue
        f = d / f"{name}.ptx"
        model = header(f.read_text(), "MODEL") if f.exists() else []
        seen = observed(compile_ptx(text, want_cubin=False))
        for _ in range(4):
            head = [f"// EXPERIMENT: {desc}"] + [f"// PTXAS: {o}" for o in seen] + [f"// MODEL: {m}" for m in model]
            full = "\n".join(head) + "\n" + text
            now = observed(compile_ptx(full, want_cubin=False))
            if now == seen:
                break
            seen = now
        f.write_text(full)
        written.append(f)
    return written


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    for p in record(sys.argv[1] if len(sys.argv) > 1 else "tests/data/checker", sys.argv[2:]):
        print(p, recorded(p))
