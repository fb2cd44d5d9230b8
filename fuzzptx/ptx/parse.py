"""PTX text -> IR.  The exact inverse of ``emit`` on what the framework builds, and a
reader for real-world PTX (nvcc, Triton) in the supported subset.

One regex tokenizer plus a hand-written recursive-descent parser: it sits on the
fuzz hot path, so no parser generator and no per-character Python loops.  Every
malformed input raises ``PtxSyntaxError`` (one line: ``file:line:col: message``).

Register vs symbol: a name starting with ``%`` is a register; a plain name is a
register only if a ``.reg`` declaration (or a ``.reg`` parameter) earlier in the
same function declares it, otherwise it is a symbol (label, variable, function).
A predicate pair ``%p|%q`` (setp, shfl) is one ``Reg`` whose name holds the ``|``;
``fuzzptx.ptx.dataflow.split_pair`` splits it.

Tensor operands ``[tmap, {c0, c1}]`` (TMA) are ``TensorAddr``.  Not supported (clear error):
texture/surface operands other than that shape, operand
expressions (``sym+4`` outside brackets), ``.attribute(...)``, vector parameters.

``parse(emit(m)) == m`` holds when the IR keeps PTX's own rules, which builders must:
a ``Reg`` without ``%`` is declared (``.reg``) before its first use; ``Imm.value`` is
what its ``text`` denotes (an f32 ``0f`` immediate carries the f32-rounded value; NaN
never compares equal); ``VarDecl.init``, ``Directive.text`` and attributes carry no
leading/trailing blanks (``.loc``/``.file`` on one line, other directives end in ';');
``Param.ptr`` starts with ``.ptr``.  Parsing normalises ``.reg .b32 a, b<4>`` into one
RegDecl per ``<N>`` name and per run of plain names, ``[%r+0]`` to ``[%r]`` and splits
multi-name variable declarations.
"""
from __future__ import annotations

from bisect import bisect_right
import functools
import re
import struct
from itertools import accumulate, compress, count, repeat
from operator import add, not_
from pathlib import Path

from fuzzptx.errors import FuzzptxError

from .ir import (
    Addr,
    CallArgs,
    Directive,
    Function,
    Guard,
    Imm,
    Instr,
    Label,
    Module,
    Neg,
    Param,
    Reg,
    RegDecl,
    Scope,
    SrcLoc,
    Sym,
    TensorAddr,
    VarDecl,
    Vec,
)

__all__ = ["PtxSyntaxError", "parse", "parse_file", "OPCODES", "TYPES"]


class PtxSyntaxError(FuzzptxError):
    """Malformed PTX: ``str(err)`` is ``file:line:col: message``."""

    def __init__(self, message: str, file: str, line: int, col: int):
        super().__init__(message, file, line, col)


# ------------------------------------------------------------------ vocabulary

# Base mnemonics of PTX ISA 9.0 (text before the first dot).  An opcode whose base
# is not here is a garbled token, not an "instruction outside the catalogue".
OPCODES = frozenset(
    """
    abs activemask add addc alloca and applypriority atom bar barrier bfe bfi bfind bmsk bra brev
    brkpt brx call clusterlaunchcontrol clz cnot copysign cos cp createpolicy cvt cvta discard
    div dp2a dp4a elect ex2 exit fence fma fns getctarank griddepcontrol isspacep istypep ld
    ldmatrix ldu lg2 lop3 mad mad24 madc mapa match max mbarrier membar min mma mov movmatrix mul
    mul24 multimem nanosleep neg not or pmevent popc prefetch prefetchu prmt rcp red redux rem
    ret rsqrt sad selp set setmaxnreg setp shf shfl shl shr sin slct sqrt st stackrestore
    stacksave stmatrix sub subc suld suq sured sust szext tanh tcgen05 tensormap testp tex tld4
    trap txq vabsdiff vabsdiff2 vabsdiff4 vadd vadd2 vadd4 vavrg2 vavrg4 vmad vmax vmax2 vmax4
    vmin vmin2 vmin4 vote vset vset2 vset4 vshl vshr vsub vsub2 vsub4 wgmma wmma xor
    """.split()
)

TYPES = frozenset(
    """
    .b8 .b16 .b32 .b64 .b128 .u8 .u16 .u32 .u64 .s8 .s16 .s32 .s64 .f16 .f16x2 .bf16 .bf16x2
    .f32 .f64 .pred .tf32 .e4m3 .e5m2 .e4m3x2 .e5m2x2 .e2m1 .e2m3 .e3m2 .e2m1x2 .e2m3x2 .e3m2x2
    .ue8m0 .ue8m0x2 .s4 .u4 .b1 .texref .samplerref .surfref
    """.split()
)

_SPACES = frozenset((".global", ".const", ".shared", ".local", ".param"))
_LINKAGE = frozenset((".visible", ".extern", ".weak", ".common"))
_VECTORS = frozenset((".v2", ".v4", ".v8"))
_PTR_PARTS = frozenset((".global", ".const", ".shared", ".local", ".align"))
_FUNC_ATTRS = frozenset(
    """
    .maxntid .reqntid .minnctapersm .maxnctapersm .maxnreg .noreturn .explicitcluster
    .reqnctapercluster .maxclusterrank .blocksareclusters .abi_preserve .abi_preserve_control
    """.split()
)
# Instructions whose '[tmap, {coords}]' operand is a TensorAddr (tex/suld/sust are not read).
_TENSOR_OPCODES = ("cp.async.bulk.tensor", "cp.reduce.async.bulk.tensor", "prefetch.tensor", "prefetch.global.tensor")
_LINE_DIRECTIVES = frozenset((".loc", ".file"))  # end at the end of the line, no ';'
_SEMI_DIRECTIVES = frozenset((".pragma", ".callprototype", ".calltargets", ".branchtargets", ".alias"))

# ------------------------------------------------------------------ tokenizer

# One capturing alternation for re.split: the separators between tokens are then pure
# whitespace, and token texts and start offsets come out of C-level list operations.
_TOKEN_BODY = (
    r"[\w$%][\w$]*(?:\.[\w$]+|::[\w$]+)*"  # %r1 %tid.x ld.global.u32 fence.proxy.async.shared::cta 0f3F800000 1.5
    r"|\.[A-Za-z_][\w$]*(?:::[\w$]+)*"  # .reg .b32 .shared::cta
    r"|//[^\n]*|/\*.*?\*/"  # comments (dropped)
    r'|"(?:[^"\\\n]|\\.)*"'  # strings
    r"|\S"  # punctuation, or a stray character the parser reports
)
_TOKEN = re.compile(f"({_TOKEN_BODY})", re.S)
# Only texts holding a signed exponent (1.5e-3) pay for the extra alternative.
_TOKEN_EXP = re.compile(rf"(\d+(?:\.\d*)?[eE][+-]\d+|{_TOKEN_BODY})", re.S)
_HAS_EXP = re.compile(r"\d[eE][+-]\d")
_NUMBER = re.compile(
    r"0[fF][0-9A-Fa-f]{8}|0[dD][0-9A-Fa-f]{16}|0[xX][0-9A-Fa-f]+U?|0[bB][01]+U?"
    r"|\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+U?"
)
_WORD_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$%")
_PUNCT = frozenset("{}()[],;:@!+-<>=|")


def _kind(t: str) -> str:
    """Token class from its first character: w(ord) n(umber) d(irective) s(tring) p(unct) eof bad."""
    if not t:
        return "eof"
    c = t[0]
    if c in _WORD_START:
        return "w"
    if c.isdigit():
        return "n"
    if c == ".":
        return "d"
    if c == '"':
        return "s"
    return "p" if c in _PUNCT else "bad"


def _tokenize(text: str, start: int) -> tuple[list[str], list[int]]:
    """Token texts and their start offsets; comments are dropped, everything else is kept."""
    pattern = _TOKEN_EXP if _HAS_EXP.search(text, start) else _TOKEN
    parts = pattern.split(text if start == 0 else text[start:])
    offsets = list(accumulate(map(len, parts), initial=start))
    texts = parts[1::2]
    starts = offsets[1:-1:2]
    if "//" in text or "/*" in text:
        keep = list(map(not_, map(str.startswith, texts, repeat(("//", "/*")))))
        texts = list(compress(texts, keep))
        starts = list(compress(starts, keep))
    return texts, starts


_new = object.__new__


def _instr(opcode: str, operands: tuple, guard, loc: SrcLoc) -> Instr:
    """``Instr(...)`` without the frozen-dataclass ``__setattr__`` cost (the parse hot path)."""
    o = _new(Instr)
    d = o.__dict__
    d["opcode"] = opcode
    d["operands"] = operands
    d["guard"] = guard
    d["loc"] = loc
    return o


def _addr(base, offset: int) -> Addr:
    o = _new(Addr)
    d = o.__dict__
    d["base"] = base
    d["offset"] = offset
    return o


def _srcloc(file: str, line: int, col: int) -> SrcLoc:
    o = _new(SrcLoc)
    d = o.__dict__
    d["file"] = file
    d["line"] = line
    d["col"] = col
    return o


@functools.lru_cache(maxsize=4096)
def _imm_value(t: str) -> int | float:
    """The value of a PTX numeric literal (its spelling is kept separately in ``Imm.text``)."""
    if not _NUMBER.fullmatch(t):
        if t[:2] in ("0f", "0F", "0d", "0D"):
            digits = 8 if t[1] in "fF" else 16
            raise ValueError(f"bad immediate {t!r}: 0{t[1]} needs exactly {digits} hex digits")
        raise ValueError(f"bad number {t!r}")
    if len(t) > 1 and t[0] == "0":
        c = t[1]
        if c in "fF":
            return struct.unpack("<f", int(t[2:], 16).to_bytes(4, "little"))[0]
        if c in "dD":
            return struct.unpack("<d", int(t[2:], 16).to_bytes(8, "little"))[0]
        if c in "xX":
            return int(t[2:].rstrip("U"), 16)
        if c in "bB":
            return int(t[2:].rstrip("U"), 2)
    if "." in t or "e" in t or "E" in t:
        return float(t)
    t = t.rstrip("U")
    if len(t) > 1 and t[0] == "0":
        try:
            return int(t, 8)
        except ValueError:
            raise ValueError(f"bad octal number {t!r}") from None
    return int(t)


# ------------------------------------------------------------------ parser


# Operand lists inside operand lists (``{...}``, ``(...)``): PTX nests two deep at most; a file
# nesting deeper than this is refused in one line before the recursion runs out of stack.
MAX_NESTING = 32


class _Parser:
    """Recursive descent over parallel lists ``tx`` (token texts) and ``ps`` (start offsets)."""

    depth = 0  # operand lists open around the current token

    def __init__(self, text: str, file: str):
        self.text = text
        self.file = file
        # start offset of each line (C-level: line k starts after k newlines and lines 0..k-1)
        self.lines = list(map(add, accumulate(map(len, text.split("\n")), initial=0), count()))
        self.preamble, start = self._preamble()
        self.tx, self.ps = _tokenize(text, start)
        self.tx += ("",) * 4  # end-of-file sentinels: lookahead never runs off the end
        self.ps += (len(text.rstrip()),) * 4
        self.i = 0
        self.imms: dict[str, Imm] = {}
        self._reset_function_scope()

    # ---- locations and errors

    def where(self, pos: int) -> tuple[int, int]:
        line = bisect_right(self.lines, pos)
        return line, pos - self.lines[line - 1] + 1

    def loc(self, pos: int) -> SrcLoc:
        line = bisect_right(self.lines, pos)
        return _srcloc(self.file, line, pos - self.lines[line - 1] + 1)

    def err(self, message: str, pos: int):
        line, col = self.where(pos)
        raise PtxSyntaxError(message, self.file, line, col)

    def found(self, i: int | None = None) -> str:
        t = self.tx[self.i if i is None else i]
        return repr(t) if t else "end of file"

    def tok_err(self, message: str, i: int | None = None):
        pos = self.ps[self.i if i is None else i]
        if self.text.startswith("/*", pos):
            message = "unterminated /* comment"
        elif self.text.startswith('"', pos) and self.tx[self.i if i is None else i] == '"':
            message = "unterminated string"
        self.err(message, pos)

    def end_of(self, i: int) -> int:
        return self.ps[i] + len(self.tx[i])

    def expect(self, text: str, what: str | None = None) -> None:
        i = self.i
        if self.tx[i] != text:
            if text == ";" and i > 0 and self.tx[i]:
                prev_end = self.end_of(i - 1)
                if self.where(prev_end)[0] != self.where(self.ps[i])[0]:
                    self.err("missing ';' at end of statement", prev_end)
            self.tok_err(f"expected {what or repr(text)}, found {self.found()}")
        self.i = i + 1

    def expect_kind(self, kind: str, what: str) -> str:
        t = self.tx[self.i]
        if _kind(t) != kind:
            self.tok_err(f"expected {what}, found {self.found()}")
        self.i += 1
        return t

    def number(self, what: str) -> int:
        t = self.expect_kind("n", what)
        try:
            v = _imm_value(t)
        except ValueError as e:
            self.err(str(e), self.ps[self.i - 1])
        if not isinstance(v, int):
            self.err(f"expected an integer for {what}, found {t!r}", self.ps[self.i - 1])
        return v

    def _preamble(self) -> tuple[tuple[str, ...], int]:
        """Leading ``//`` lines (a repro header) become ``Module.preamble``."""
        out: list[str] = []
        pos = 0
        text = self.text
        while text.startswith("//", pos):
            end = text.find("\n", pos)
            line = text[pos + 2 : len(text) if end < 0 else end].rstrip("\r")
            out.append(line[1:] if line.startswith(" ") else line)
            if end < 0:
                return tuple(out), len(text)
            pos = end + 1
        return tuple(out), pos

    # ---- module

    def module(self) -> Module:
        tx = self.tx
        header: dict[str, object] = {}
        items: list = []
        while True:
            t = tx[self.i]
            if not t:
                break
            s = self.ps[self.i]
            if t in (".version", ".target", ".address_size"):
                self.header_directive(header, items)
                continue
            if _kind(t) != "d":  # the wrong token itself, before what a missing header would say
                if t == "}":
                    self.tok_err("unmatched '}' at module scope")
                self.tok_err(f"expected a directive at module scope, found {t!r}")
            if ".version" not in header:
                self.tok_err("missing .version directive: a PTX module must start with .version")
            if ".target" not in header:
                self.tok_err("missing .target directive before the first declaration")
            linkage = ""
            if t in _LINKAGE:
                linkage = t
                self.i += 1
                t = tx[self.i]
            if t in (".entry", ".func"):
                items.append(self.function(linkage, s))
            elif t in _SPACES:
                items.extend(self.var_decls(linkage, s))
            elif linkage:
                self.tok_err(f"expected .entry, .func or a state space after {linkage}, found {self.found()}")
            else:
                items.append(self.directive(top=True))
        if ".version" not in header:
            self.tok_err("missing .version directive: a PTX module must start with .version")
        if ".target" not in header:
            self.tok_err("missing .target directive")
        return Module(
            version=header[".version"],
            target=header[".target"],
            address_size=header.get(".address_size"),  # None: not written (emit writes none)
            items=tuple(items),
            preamble=self.preamble,
        )

    def header_directive(self, header: dict, items: list) -> None:
        t = self.tx[self.i]
        if t in header:
            self.tok_err(f"duplicate {t} directive")
        if t != ".version" and ".version" not in header:
            self.tok_err("missing .version directive: a PTX module must start with .version")
        if items:
            self.tok_err(f"{t} must come before the first declaration")
        self.i += 1
        if t == ".version":
            v = self.expect_kind("n", "a version number like 8.0")
            if not re.fullmatch(r"\d+\.\d+", v):
                self.tok_err(f"bad .version {v!r}", self.i - 1)
            header[t] = v
        elif t == ".target":
            names = [self.expect_kind("w", "a target name like sm_90a")]
            while self.tx[self.i] == ",":
                self.i += 1
                names.append(self.expect_kind("w", "a target option"))
            header[t] = ", ".join(names)
        else:
            size = header[t] = self.number("an address size (32 or 64)")
            if size not in (32, 64):
                self.tok_err(f".address_size must be 32 or 64, not {size}", self.i - 1)

    def directive(self, top: bool) -> Directive:
        """A directive kept as text: ``.loc``/``.file`` to end of line, ``.section {..}``, others to ';'."""
        tx, ps = self.tx, self.ps
        i0 = self.i
        t, s = tx[i0], ps[i0]
        if t in _LINE_DIRECTIVES:
            eol = self.text.find("\n", s)
            if eol < 0:
                eol = len(self.text)
            self.i += 1
            while tx[self.i] and ps[self.i] < eol:
                self.i += 1
        elif t == ".section" and top:
            self.i += 1
            self.expect_kind("d", "a section name")
            self.expect("{")
            while tx[self.i] != "}":
                if not tx[self.i]:
                    self.tok_err(f"unexpected end of file inside .section opened at line {self.where(s)[0]}")
                self.i += 1
            self.i += 1
        elif t in _SEMI_DIRECTIVES:
            self.i += 1
            while tx[self.i] != ";":
                if not tx[self.i] or tx[self.i] in ("{", "}"):
                    self.expect(";")
                self.i += 1
            self.i += 1
        else:
            self.tok_err(f"unknown directive {t!r}")
        for j in range(i0, self.i):
            if tx[j] == '"':
                self.tok_err("unterminated string", j)
        return Directive(self.text[s : self.end_of(self.i - 1)], self.loc(s))

    # ---- declarations

    def var_decls(self, linkage: str, start: int) -> list[VarDecl]:
        """``[linkage] .space [.align N] [.vN] .type name[dims] [= init] {, name...};``"""
        tx = self.tx
        space = tx[self.i]
        self.i += 1
        align = None
        vector = ""
        while True:
            t = tx[self.i]
            if t == ".align":
                self.i += 1
                align = self.number("an alignment")
            elif t in _VECTORS:
                vector = t
                self.i += 1
            elif t in (".ptr", ".attribute"):
                self.tok_err(f"{t} in a variable declaration is not supported")
            else:
                break
        vtype = self.type_name()
        loc = self.loc(start)
        out: list[VarDecl] = []
        while True:
            name = self.expect_kind("w", "a variable name")
            dims = self.dims()
            init = None
            if tx[self.i] == "=":
                self.i += 1
                init = self.init_text()
            out.append(VarDecl(space, vtype, name, align, dims, init, linkage, vector, loc))
            if tx[self.i] == ",":
                self.i += 1
                continue
            self.expect(";")
            return out

    def type_name(self) -> str:
        t = self.tx[self.i]
        if t not in TYPES:
            self.tok_err(f"expected a type like .b32, found {self.found()}")
        self.i += 1
        return t

    def dims(self) -> tuple[int | None, ...]:
        out: list[int | None] = []
        while self.tx[self.i] == "[":
            self.i += 1
            if self.tx[self.i] == "]":
                out.append(None)
            else:
                out.append(self.number("an array extent"))
            self.expect("]")
        return tuple(out)

    def init_text(self) -> str:
        """Initialiser text as written, up to the ',' or ';' that ends it."""
        tx = self.tx
        first = self.i
        depth = 0
        while True:
            t = tx[self.i]
            if not t:
                self.expect(";")
            if t in ("{", "("):
                depth += 1
            elif t in ("}", ")"):
                depth -= 1
                if depth < 0:
                    self.tok_err(f"unbalanced {t!r} in initialiser")
            elif depth == 0 and t in (",", ";"):
                break
            self.i += 1
        if self.i == first:
            self.tok_err("empty initialiser")
        return self.text[self.ps[first] : self.end_of(self.i - 1)]

    def reg_decls(self, start: int) -> list[RegDecl]:
        """``.reg [.vN] .type a, b, %r<N>, ...;`` -> one RegDecl per ``<N>`` name and per run of plain names."""
        tx = self.tx
        self.i += 1
        vector = ""
        if tx[self.i] in _VECTORS:
            vector = tx[self.i]
            self.i += 1
        rtype = self.type_name()
        loc = self.loc(start)
        out: list[RegDecl] = []
        plain: list[str] = []
        while True:
            name = self.expect_kind("w", "a register name")
            if tx[self.i] == "<":
                self.i += 1
                count = self.number("a register count")
                self.expect(">")
                if plain:
                    out.append(RegDecl(rtype, tuple(plain), None, vector, loc))
                    plain = []
                out.append(RegDecl(rtype, (name,), count, vector, loc))
                if name[0] != "%":
                    self.stems[name] = max(count, self.stems.get(name, 0))
            else:
                plain.append(name)
                if name[0] != "%":
                    self.regnames.add(name)
            if tx[self.i] == ",":
                self.i += 1
                continue
            self.expect(";", "',' or ';'")
            break
        if plain:
            out.append(RegDecl(rtype, tuple(plain), None, vector, loc))
        return out

    # ---- functions

    def _reset_function_scope(self) -> None:
        self.regnames: set[str] = set()
        self.stems: dict[str, int] = {}
        self.regs: dict[str, Reg] = {}

    def function(self, linkage: str, start: int) -> Function:
        tx = self.tx
        kind = tx[self.i][1:]
        self.i += 1
        self._reset_function_scope()
        returns: tuple[Param, ...] = ()
        if kind == "func" and tx[self.i] == "(":
            returns = self.params()
        name = self.expect_kind("w", f"a .{kind} name")
        params: tuple[Param, ...] = ()
        if tx[self.i] == "(":
            params = self.params()
        attributes: list[str] = []
        while tx[self.i] in _FUNC_ATTRS:
            a0 = self.i
            self.i += 1
            if _kind(tx[self.i]) == "n":
                self.i += 1
                while tx[self.i] == ",":
                    self.i += 1
                    self.expect_kind("n", "a number")
            attributes.append(self.text[self.ps[a0] : self.end_of(self.i - 1)])
        t = tx[self.i]
        body = None
        if t == ";":
            self.i += 1
        elif t == "{":
            self.i += 1
            body = self.body(name, start)
        else:
            self.tok_err(f"expected '{{' or ';' after the signature of {name!r}, found {self.found()}")
        return Function(kind, name, params, returns, body, linkage, tuple(attributes), self.loc(start))

    def params(self) -> tuple[Param, ...]:
        tx = self.tx
        self.expect("(")
        out: list[Param] = []
        if tx[self.i] == ")":
            self.i += 1
            return ()
        while True:
            space = tx[self.i]
            if space not in (".param", ".reg"):
                self.tok_err(f"expected .param or .reg, found {self.found()}")
            self.i += 1
            align = None
            if tx[self.i] == ".align":
                self.i += 1
                align = self.number("an alignment")
            if tx[self.i] in _VECTORS:
                self.tok_err("vector parameters are not supported")
            ptype = self.type_name()
            ptr = ""
            if tx[self.i] == ".ptr":
                p0 = self.i
                self.i += 1
                while tx[self.i] in _PTR_PARTS:
                    self.i += 1
                    if tx[self.i - 1] == ".align":
                        self.number("an alignment")
                ptr = self.text[self.ps[p0] : self.end_of(self.i - 1)]
            name = self.expect_kind("w", "a parameter name")
            out.append(Param(space, ptype, name, align, self.dims(), ptr))
            if space == ".reg" and name[0] != "%":
                self.regnames.add(name)
            if tx[self.i] == ",":
                self.i += 1
                continue
            self.expect(")", "',' or ')'")
            return tuple(out)

    def body(self, fname: str, fstart: int, scope_start: int | None = None) -> tuple:
        tx, ps = self.tx, self.ps
        out: list = []
        append = out.append
        while True:
            t = tx[self.i]
            c = t[:1]
            if c in _WORD_START and c:
                if tx[self.i + 1] == ":":
                    append(Label(t, self.loc(ps[self.i])))
                    self.i += 2
                else:
                    append(self.instr())
            elif c == ".":
                s = ps[self.i]
                if t == ".reg":
                    out.extend(self.reg_decls(s))
                elif t in _SPACES:
                    out.extend(self.var_decls("", s))
                else:
                    append(self.directive(top=False))
            elif t == "}":
                self.i += 1
                return tuple(out)
            elif t == "{":
                s = ps[self.i]
                self.i += 1
                append(Scope(self.body(fname, fstart, s), self.loc(s)))
            elif t == "@":
                append(self.instr())
            elif not t:
                what = f"scope opened at line {self.where(scope_start)[0]}" if scope_start is not None else "body"
                self.tok_err(
                    f"unexpected end of file: {what} of {fname!r} (line {self.where(fstart)[0]}) is not closed"
                )
            else:
                self.tok_err(f"unexpected {t!r} in the body of {fname!r}")

    # ---- instructions

    def reg_or_sym(self, name: str):
        r = self.regs.get(name)
        if r is not None:
            return r
        if name[0] == "%" or name in self.regnames or self._stem_declared(name):
            r = self.regs[name] = Reg(name)
            return r
        return Sym(name)

    def reg(self, name: str) -> Reg:
        """A name in a register-only position (guard, ``!p``, ``p|q``)."""
        r = self.regs.get(name)
        if r is None:
            r = self.regs[name] = Reg(name)
        return r

    def _stem_declared(self, name: str) -> bool:
        if not self.stems:
            return False
        j = len(name)
        while j > 0 and name[j - 1].isdigit():
            j -= 1
            n = self.stems.get(name[:j])
            if n is not None and int(name[j:]) < n and (name[j] != "0" or j == len(name) - 1):
                return True
        return False

    def instr(self) -> Instr:
        tx = self.tx
        s = self.ps[self.i]
        t = tx[self.i]
        guard = None
        if t == "@":
            self.i += 1
            neg = tx[self.i] == "!"
            if neg:
                self.i += 1
            # a guard can only be a register: undeclared names are the checker's business
            guard = Guard(self.reg(self.expect_kind("w", "a predicate register after '@'")), neg)
            t = tx[self.i]
            if _kind(t) != "w":
                self.tok_err(f"expected an instruction, found {self.found()}")
        dot = t.find(".")
        if (t if dot < 0 else t[:dot]) not in OPCODES:
            self.tok_err(f"unknown instruction {t!r}")
        self.opcode = t
        i = self.i + 1
        ops: list = []
        if tx[i] == ";":
            self.i = i + 1
        else:
            regs = self.regs
            while True:
                # fast path: a plain %register operand
                o = tx[i]
                if o[:1] == "%" and tx[i + 1] != "|":
                    r = regs.get(o)
                    if r is None:
                        r = regs[o] = Reg(o)
                    ops.append(r)
                    i += 1
                else:
                    self.i = i
                    ops.append(self.operand())
                    i = self.i
                o = tx[i]
                if o == ",":
                    i += 1
                    continue
                self.i = i
                if o == ";":
                    self.i = i + 1
                    break
                self.expect(";", "',' or ';'")
        line = bisect_right(self.lines, s)
        return _instr(t, tuple(ops), guard, _srcloc(self.file, line, s - self.lines[line - 1] + 1))

    def operand(self):
        tx = self.tx
        t = tx[self.i]
        self.i += 1
        c = t[:1]
        if c == "%":
            r = self.regs.get(t)
            if r is None:
                r = self.regs[t] = Reg(t)
            if tx[self.i] == "|":
                return self.pair(r)
            return r
        if c in _WORD_START and c:
            op = self.reg_or_sym(t)
            if tx[self.i] == "|":
                return self.pair(op)
            return op
        if c.isdigit():
            return self.imm(t, "")
        if t == "-":
            if _kind(tx[self.i]) != "n":
                self.tok_err(f"expected a number after '-', found {self.found()}")
            self.i += 1
            return self.imm(tx[self.i - 1], "-")
        if t == "[":
            return self.address()
        if t == "{" or t == "(":
            if self.depth >= MAX_NESTING:
                self.tok_err(f"operands nested more than {MAX_NESTING} deep", self.i - 1)
            self.depth += 1
            try:
                return Vec(self.items("}")) if t == "{" else CallArgs(self.items(")"))
            finally:
                self.depth -= 1
        if t == "!":
            return Neg(self.reg(self.expect_kind("w", "a predicate register after '!'")))
        self.i -= 1
        self.tok_err(f"expected an operand, found {self.found()}")

    def pair(self, first) -> Reg:
        """``%p|%q``: one Reg named ``%p|%q`` (see ``dataflow.split_pair``); both sides are registers."""
        self.i += 1
        other = self.expect_kind("w", "a predicate register after '|'")
        return Reg(f"{first.name}|{other}")

    def imm(self, t: str, sign: str) -> Imm:
        text = sign + t
        cached = self.imms.get(text)
        if cached is not None:
            return cached
        try:
            v = _imm_value(t)
        except ValueError as e:
            self.tok_err(str(e), self.i - 1)
        im = self.imms[text] = Imm(-v if sign else v, text)
        return im

    def items(self, close: str) -> tuple:
        tx = self.tx
        regs = self.regs
        out: list = []
        i = self.i
        if tx[i] == close:
            self.i = i + 1
            return ()
        while True:
            o = tx[i]
            if o[:1] == "%" and tx[i + 1] != "|":  # fast path: a plain %register
                r = regs.get(o)
                if r is None:
                    r = regs[o] = Reg(o)
                out.append(r)
                i += 1
            else:
                self.i = i
                out.append(self.operand())
                i = self.i
            if tx[i] == ",":
                i += 1
                continue
            self.i = i
            self.expect(close, f"',' or {close!r}")
            return tuple(out)

    def address(self) -> Addr:
        tx = self.tx
        i = self.i
        t = tx[i]
        if t[:1] == "%":  # fast path: [%r], [%r+N]
            base = self.regs.get(t)
            if base is None:
                base = self.regs[t] = Reg(t)
            nt = tx[i + 1]
            if nt == "]":
                self.i = i + 2
                return _addr(base, 0)
            if nt == "+" and tx[i + 3] == "]" and tx[i + 2][:1].isdigit():
                self.i = i + 4
                return _addr(base, self.int_at(i + 2))
        k = _kind(t)
        self.i += 1
        if k == "n" or (t == "-" and _kind(tx[self.i]) == "n"):
            base = None
            if t == "-":
                self.i += 1
            offset = self.int_at(self.i - 1) * (-1 if t == "-" else 1)
        elif k == "w":
            base = self.reg_or_sym(t)
            offset = 0
            nt = tx[self.i]
            if nt in ("+", "-"):
                self.i += 1
                sign = -1 if nt == "-" else 1
                if tx[self.i] == "-":
                    self.i += 1
                    sign = -sign
                self.expect_kind("n", "an integer address offset")
                offset = sign * self.int_at(self.i - 1)
        else:
            self.i -= 1
            self.tok_err(f"expected a register, symbol or number in '[ ]', found {self.found()}")
        if tx[self.i] == ",":
            return self.tensor_addr(base, offset)
        self.expect("]", "']'")
        return _addr(base, offset)

    def tensor_addr(self, base, offset: int) -> TensorAddr:
        """``[tmap, {c0, ...}]`` (cp.async.bulk.tensor, prefetch.tensor); the tensor map is a
        bare symbol or register, the coordinates a brace vector."""
        comma = self.i
        if not self.opcode.startswith(_TENSOR_OPCODES):
            self.tok_err("texture/surface operands '[a, b]' are not supported")
        if base is None or offset:
            self.tok_err("a tensor operand '[tmap, {coords}]' names its tensor map without an offset", comma)
        self.i += 1
        if self.tx[self.i] != "{":
            self.tok_err(
                f"texture/surface operands '[a, b]' are not supported (only '[tmap, {{coords}}]'), found {self.found()}"
            )
        self.i += 1
        coords = self.items("}")
        if not coords:
            self.tok_err("a tensor operand needs at least one coordinate", self.i - 1)
        self.expect("]", "']'")
        return TensorAddr(base, coords)

    def int_at(self, i: int) -> int:
        t = self.tx[i]
        try:
            v = _imm_value(t)
        except ValueError as e:
            self.tok_err(str(e), i)
        if not isinstance(v, int):
            self.tok_err(f"address offset must be an integer, found {t!r}", i)
        return v


def parse(text: str, file: str = "<string>") -> Module:
    """Parse PTX text into a Module; raises PtxSyntaxError (file:line:col: message) on bad input."""
    return _Parser(text, file).module()


def parse_file(path) -> Module:
    """Parse a .ptx file; an unreadable file is a one-line FuzzptxError naming it."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as e:
        raise FuzzptxError(f"cannot read PTX file: {e.strerror or e}", str(p)) from None
    return parse(text, str(p))
