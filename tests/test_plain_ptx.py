"""Any PTX file is an input: without a fuzzptx header one is inferred (the first kernel, one CTA
of 128 threads, each pointer parameter a random u32 buffer, scalars 0), so plain PTX from any
compiler replays and shrinks."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from fuzzptx import cli
from fuzzptx.program import INFERRED, Program, ReproError
from fuzzptx.reduce import instruction_count

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "corpus" / "notes_direct_call_no_serialization.ptx"  # ptxas 13.0.88: C7519 and C7517


def plain(text: str) -> str:
    """The PTX of a repro file without its comment header."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("//")) + "\n"


def padded(text: str, n: int = 40) -> str:
    """``text`` with ``n`` unrelated instructions (and their registers) added to its kernel."""
    decl = "\t.reg .u32 %pad<4>;\n"
    body = "".join(f"\tadd.u32 %pad{i % 3 + 1}, %pad{i % 3}, {i};\n" for i in range(n))
    return re.sub(r"(\.visible \.entry k\(\)\n\{\n)", lambda m: m.group(1) + decl + "\tmov.u32 %pad0, 7;\n" + body, text)


def test_a_plain_kernel_gets_a_header_it_can_replay(tmp_path, capsys):
    f = tmp_path / "k.ptx"
    f.write_text(plain(REAL.read_text()))
    p = Program.from_file(str(f))
    assert p.launch.kernel == "k" and p.launch.threads == 128
    assert any(n.startswith(INFERRED) for n in p.notes)
    assert cli.main(["replay", str(f), "--no-hardware"]) == 0
    assert "C7519" in capsys.readouterr().out


def test_pointer_parameters_become_buffers_and_scalars_zero(tmp_path):
    f = tmp_path / "k.ptx"
    f.write_text(".version 8.0\n.target sm_90a\n.address_size 64\n"
                 ".visible .entry k(.param .u64 out, .param .u32 n)\n{\n\tret;\n}\n")
    p = Program.from_file(str(f))
    assert [(b.name, b.output) for b in p.buffers] == [("out", True)] and p.scalars == (("n", 0),)


def test_no_kernel_is_one_line_and_an_array_parameter_is_zero_bytes(tmp_path):
    f = tmp_path / "k.ptx"
    f.write_text(".version 8.0\n.target sm_90a\n")
    with pytest.raises(ReproError, match="no .entry kernel"):
        Program.from_file(str(f))
    f.write_text(".version 8.0\n.target sm_90a\n.address_size 64\n"
                 ".visible .entry k(.param .align 64 .b8 tmap[128]) .reqntid 384\n{\n\tret;\n}\n")
    p = Program.from_file(str(f))  # an array parameter is zero bytes; the launch is the kernel's .reqntid
    assert p.scalars == (("tmap", 0),) and p.launch.block == (384, 1, 1)
    assert "array parameter(s) tmap: zero bytes" in p.notes[0] and "PARAM: tmap value=0" in p.to_ptx()


def test_a_padded_plain_kernel_shrinks_to_ten_instructions_keeping_its_ptxas_signature(tmp_path):
    """The issue's demonstration: a real kernel, 40 unrelated instructions added, no header."""
    f = tmp_path / "padded.ptx"
    f.write_text(padded(plain(REAL.read_text())))
    before = instruction_count(Program.from_file(str(f)))
    assert before >= 45
    out = tmp_path / "small.ptx"
    t0 = time.perf_counter()
    assert cli.main(["shrink", str(f), "--keep", "ptxas:C7519", "-o", str(out), "--budget", "60"]) == 0
    took = time.perf_counter() - t0
    small = Program.from_file(str(out))
    assert instruction_count(small) <= 10, small.to_ptx()
    assert took <= 90  # the budget is 60 s; the rest is the first judging and the file's EXPECT lines
    assert "C7519" in out.read_text()
