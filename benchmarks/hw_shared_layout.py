"""Proof run: where shared variables land in the CTA's shared window, reference vs an H100.

Each case is a small kernel that writes the shared addresses of its ``.shared`` variables
(``mov.u32 %r, var``) to a global buffer and then touches each variable.  The same program
runs on the GPU (``HardwareWorker``) and on the reference; the record keeps both address
lists and whether they agree.  The last cases store to shared offset 0, inside the bytes
the hardware reserves below the first variable: the record says what the GPU did there,
and what the reference says (an out-of-bounds error).

    python benchmarks/hw_shared_layout.py --out tests/hw_records/shared_layout.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"


@dataclass(frozen=True)
class Case:
    name: str
    module_vars: tuple[str, ...]  # declarations at module scope
    kernel_vars: tuple[str, ...]  # declarations inside the kernel
    dynamic: int = 0  # bytes of dynamic shared memory at launch
    touch_reserved: bool = False  # also store to shared offset 0
    unused: tuple[str, ...] = ()  # declared variables the kernel never mentions
    order: tuple[str, ...] = ()  # the order the kernel first mentions its variables (default: declared)

    def names(self) -> list[str]:
        return list(self.order) if self.order else [n for n in (d.split()[-1].split("[")[0].rstrip(";") for d in self.module_vars + self.kernel_vars)
                if n not in self.unused]

    def text(self) -> str:
        names = self.names()
        n = max(len(names), 1)
        lines = [f"// LAUNCH: kernel=k grid=1,1,1 block=32,1,1"
                 + (f" smem={self.dynamic}" if self.dynamic else ""),
                 f"// BUFFER: out type=u32 count={n} init=zeros output", HEAD]
        lines += [d if d.rstrip().endswith(";") else d + ";" for d in self.module_vars]
        lines += [".visible .entry k(.param .u64 out)", "{", "\t.reg .b32 %r<8>;", "\t.reg .b64 %rd<4>;",
                  "\t.reg .pred %p<2>;"]
        lines += ["\t" + (d if d.rstrip().endswith(";") else d + ";") for d in self.kernel_vars]
        lines += ["\tld.param.u64 %rd1, [out];", "\tcvta.to.global.u64 %rd1, %rd1;",
                  "\tmov.u32 %r1, %tid.x;", "\tsetp.eq.u32 %p1, %r1, 0;"]
        for i, name in enumerate(names):
            lines += [f"\tmov.u32 %r2, {name};", f"\t@%p1 st.global.u32 [%rd1+{4 * i}], %r2;",
                      f"\t@%p1 st.shared.u8 [%r2], %r2;"]
        if self.touch_reserved:
            lines += ["\tmov.u32 %r4, 0;", "\tadd.u32 %r5, %r1, 7;", "\t@%p1 st.shared.u32 [%r4], %r5;",
                      "\t@%p1 ld.shared.u32 %r3, [%r4];",
                      f"\t@%p1 st.global.u32 [%rd1+{4 * (n - 1)}], %r3;"]
        lines += ["\tret;", "}"]
        return "\n".join(lines) + "\n"


CASES = (
    Case("two_1024_aligned_then_16", (), (".shared .align 1024 .b8 a[256]", ".shared .align 1024 .b8 b[2048]",
                                         ".shared .align 16 .b8 c[48]")),
    Case("small_alignments", (), (".shared .align 4 .b32 a[3]", ".shared .align 8 .b64 b", ".shared .align 16 .b8 c[20]",
                                  ".shared .align 2 .b16 d")),
    Case("module_then_kernel_scope", (".shared .align 16 .b8 m[100]",), (".shared .align 128 .b8 a[64]",)),
    Case("static_then_dynamic", (".extern .shared .align 16 .b8 dyn[]",), (".shared .align 1024 .b8 a[256]",), dynamic=64),
    Case("first_variable_align_4", (), (".shared .align 4 .b8 a[4]", ".shared .align 1024 .b8 b[1024]")),
    Case("module_and_kernel_same_alignment", (".shared .align 16 .b8 m[32]",), (".shared .align 16 .b8 a[32]",)),
    Case("two_module_two_kernel", (".shared .align 16 .b8 m1[32]", ".shared .align 16 .b8 m2[32]"),
         (".shared .align 16 .b8 a1[32]", ".shared .align 16 .b8 a2[32]")),
    Case("kernel_variable_used_first", (".shared .align 16 .b8 m[32]",), (".shared .align 16 .b8 a[32]",),
         order=("a", "m")),
    Case("unused_kernel_variable_first", (), (".shared .align 16 .b8 u[64]", ".shared .align 16 .b8 a[32]"),
         unused=("u",)),
    Case("unused_module_variable_first", (".shared .align 16 .b8 u[64]", ".shared .align 16 .b8 m[32]"), (),
         unused=("u",)),
    Case("reserved_store_with_variables", (), (".shared .align 16 .b8 a[64]",), touch_reserved=True),
    Case("reserved_store_without_variables", (), (), touch_reserved=True),
)


def reference_side(text: str) -> tuple[list[int] | None, str | None]:
    from fuzzptx.oracles.reference import run_program
    from fuzzptx.program import Program

    try:
        res = run_program(Program.from_ptx(text))
    except Exception as exc:  # noqa: BLE001 - the reference's error is part of the record
        return None, f"{type(exc).__name__}: {exc}"
    return [int(x) for x in np.frombuffer(res.bytes("out"), np.uint32)], None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from campaign_device import device_info

    from fuzzptx.oracles.hardware import run_programs_on_gpu
    from fuzzptx.program import Program

    texts = [c.text() for c in CASES]
    results, _ = run_programs_on_gpu([(Program.from_ptx(t), None, None) for t in texts], timeout=20.0)
    rows = []
    for c, t, hw in zip(CASES, texts, results):
        ref, ref_error = reference_side(t)
        got = None if hw.fault else [int(x) for x in np.frombuffer(hw.outputs["out"], np.uint32)]
        n = len(c.names())
        read_back = got[-1] if c.touch_reserved and got else None
        rows.append({"case": c.name, "declarations": list(c.module_vars + c.kernel_vars), "dynamic_smem": c.dynamic,
                     "touches_reserved": c.touch_reserved, "hardware_fault": hw.fault,
                     "hardware_addresses": got[:n] if got else got, "reference_addresses": ref[:n] if ref else ref,
                     "reference_error": ref_error,
                     "reserved_read_back": read_back,  # thread 0 stored tid + 7 = 7 at offset 0 and loaded it
                     "addresses_agree": bool(got is not None and ref is not None and got[:n] == ref[:n]),
                     "kernel": t})
    rec = {"what": __doc__.split("\n")[0], "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "device": device_info(), "cases": rows,
           "agree": sum(r["addresses_agree"] for r in rows if not r["touches_reserved"]),
           "layout_cases": sum(not r["touches_reserved"] for r in rows)}
    Path(args.out).write_text(json.dumps(rec, indent=1) + "\n")
    for r in rows:
        print(r["case"], "hw", r["hardware_fault"] or r["hardware_addresses"], "ref", r["reference_error"] or r["reference_addresses"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
