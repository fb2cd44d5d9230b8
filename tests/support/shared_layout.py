"""The shared-layout proof's cases: small kernels that write where their ``.shared`` variables land.

benchmarks/hw_shared_layout.py runs them on an H100 and the reference and records both;
tests/test_shared_layout.py checks the record still matches these kernels.
"""
from __future__ import annotations

from dataclasses import dataclass

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
        lines = ["// LAUNCH: kernel=k grid=1,1,1 block=32,1,1"
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
                      "\t@%p1 st.shared.u8 [%r2], %r2;"]
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
