"""ptxas releases as toolchains: name one by a SPEC, get its binaries, know which PTX it reads.

fuzzptx judges with one pinned ptxas (``oracles.ptxas``) so runs stay reproducible; this
module finds the others so a finding can be asked "since when, and is it fixed?".  A SPEC is
a release (``13.5.37``; ``13.5`` is its newest patch), a comma list, a range (``12.4-13.5``:
every known release between, inclusive, compared on the parts the bounds give), ``latest``,
``all``, ``default`` (the pinned release) or a path to a ptxas binary.

A release resolves, first found wins, to the pinned package's ptxas, ``$FUZZPTX_TOOLCHAINS/<release>/``
(a directory ``fuzzptx toolchains --pack`` made, for machines without internet), the per-user
cache, or else is fetched from NVIDIA's PyPI wheel into the cache (only ptxas and nvdisasm are
unpacked, and ``ptxas --version`` must name the release).  Cache and packed directories share
one layout, ``<release>/ptxas`` and ``<release>/nvdisasm``.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fuzzptx.errors import FuzzptxError
from fuzzptx.inputs import make_dir

from .ptxas import PINNED_VERSION, PtxasNotFound, _version_of, find_ptxas

__all__ = [
    "Release", "Toolchain", "ToolchainError", "RELEASES", "known", "latest", "parse_spec",
    "resolve", "fetch", "pack", "cache_dir", "reads", "targets", "measure_ptx_max", "status",
    "main_toolchains",
]

TOOLCHAINS_ENV = "FUZZPTX_TOOLCHAINS"
CACHE_ENV = "FUZZPTX_CACHE"

# The wheel each major release ships in, where ptxas lies inside it, and nvdisasm's wheel.
# (nvidia-cuda-nvcc-cu12 carries no nvdisasm and PyPI has no nvidia-cuda-nvdisasm-cu12.)
_WHEELS: dict[int, tuple[str, str, str]] = {
    12: ("nvidia-cuda-nvcc-cu12", "nvidia/cuda_nvcc/bin/ptxas", ""),
    13: ("nvidia-cuda-nvcc", "nvidia/cu13/bin/ptxas", "nvidia-cuda-nvdisasm"),
}
_NVDISASM_IN_WHEEL = "nvidia/cu13/bin/nvdisasm"

# Every ptxas release on PyPI (pip index versions, 2026-11-26), with the newest PTX ISA
# `.version` it reads and whether nvidia-cuda-nvdisasm has a wheel of the same release.
# PTX max: measured on 12.4.131, 12.8.93, 12.9.86, 13.0.88, 13.2.86 and 13.5.37 (a trivial sm_90a kernel
# under each `.version`; ptxas says "Unsupported .version X; current version is 'Y'"), the
# other 12.x from FACTS.md per major.minor; None = not measured (``reads`` bounds it by the
# neighbouring releases and says None where they cannot decide).
_TABLE: tuple[tuple[str, tuple[int, int] | None, bool], ...] = (
    ("12.0.76", (8, 0), False), ("12.0.140", (8, 0), False),
    ("12.1.66", (8, 1), False), ("12.1.105", (8, 1), False),
    ("12.2.91", (8, 2), False), ("12.2.128", (8, 2), False), ("12.2.140", (8, 2), False),
    ("12.3.52", (8, 3), False), ("12.3.103", (8, 3), False), ("12.3.107", (8, 3), False),
    ("12.4.99", (8, 4), False), ("12.4.131", (8, 4), False),
    ("12.5.40", (8, 5), False), ("12.5.82", (8, 5), False),
    ("12.6.20", (8, 5), False), ("12.6.68", (8, 5), False), ("12.6.77", (8, 5), False),
    ("12.6.85", (8, 5), False),
    ("12.8.61", (8, 7), False), ("12.8.93", (8, 7), False),
    ("12.9.41", (8, 8), False), ("12.9.86", (8, 8), False),
    ("13.0.48", (9, 0), False), ("13.0.88", (9, 0), False),
    ("13.1.80", None, False), ("13.1.115", None, False),
    ("13.2.51", None, True), ("13.2.78", None, True), ("13.2.86", (9, 2), True),
    ("13.3.33", None, False), ("13.3.73", None, True),
    ("13.4.59", None, False), ("13.4.92", None, True),
    ("13.5.37", (9, 5), True),
)


class ToolchainError(FuzzptxError):
    """A SPEC that names no ptxas, or a release that cannot be found or fetched."""


def _vt(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


@dataclass(frozen=True)
class Release:
    """One ptxas release on PyPI: its wheel and the newest PTX ISA version it reads."""

    version: str
    ptx_max: tuple[int, int] | None
    has_nvdisasm: bool

    @property
    def key(self) -> tuple[int, ...]:
        return _vt(self.version)

    @property
    def package(self) -> str:
        return _WHEELS[self.key[0]][0]

    @property
    def ptxas_member(self) -> str:
        return _WHEELS[self.key[0]][1]

    @property
    def nvdisasm_package(self) -> str | None:
        return _WHEELS[self.key[0]][2] if self.has_nvdisasm else None


RELEASES: tuple[Release, ...] = tuple(sorted((Release(*row) for row in _TABLE), key=lambda r: r.key))
_BY_VERSION = {r.version: r for r in RELEASES}


@dataclass(frozen=True)
class Toolchain:
    """A ptxas to run: its release, binaries, the newest PTX it reads and where it came from.

    ``source`` is "pinned package", "FUZZPTX_TOOLCHAINS dir", "cache" or "path".
    ``ptx_max`` is None where not measured; ask ``reads`` rather than compare it."""

    release: str
    ptxas: Path
    nvdisasm: Path | None
    ptx_max: tuple[int, int] | None
    source: str

    @property
    def name(self) -> str:
        """The judge name this toolchain goes by, e.g. ``ptxas@12.9.86``."""
        return f"ptxas@{self.release}"

    def reads(self, version: str | tuple[int, int]) -> bool | None:
        """Whether this ptxas reads ``.version version`` (None: unknown; see ``reads``)."""
        return reads(self.release, version)

    def targets(self) -> frozenset[str]:
        """The ``-arch`` values (sm_*) this ptxas accepts, read off its ``--help``."""
        return targets(self.ptxas)


def known(version: str) -> Release | None:
    return _BY_VERSION.get(version)


def latest() -> Release:
    return RELEASES[-1]


def reads(release: str, version: str | tuple[int, int]) -> bool | None:
    """Whether ptxas ``release`` reads PTX ``.version version``: True, False, or None when
    neither its measured maximum nor a neighbour's decides.

    A later release reads every PTX version an earlier one does, so an unmeasured release
    reads at least what the newest measured earlier one reads, and at most what the oldest
    measured later one reads.  Callers treat None as "not applicable", never as a finding."""
    v = _vt(version) if isinstance(version, str) else tuple(version)
    key = _vt(release)
    own = known(release)
    if own is not None and own.ptx_max is not None:
        return v <= own.ptx_max
    below = [r.ptx_max for r in RELEASES if r.key <= key and r.ptx_max is not None]
    above = [r.ptx_max for r in RELEASES if r.key >= key and r.ptx_max is not None]
    if below and v <= max(below):
        return True
    if above and v > min(above):
        return False
    return None


# ---------------------------------------------------------------- SPEC parsing

_RELEASE_RE = re.compile(r"\d+\.\d+(\.\d+)?")


def _looks_like_path(item: str) -> bool:
    """``./ptxas``, ``~/x/ptxas``, ``/opt/.../ptxas``, or a file name that no release spells."""
    if os.sep in item or item.startswith((".", "~")):
        return True
    return not re.fullmatch(r"[\d.-]+", item) and Path(item).is_file()


def _one_release(text: str, spec: str) -> str:
    if not _RELEASE_RE.fullmatch(text):
        raise ToolchainError(f"--ptxas {spec}: {text!r} is not a release, range, list, "
                             "'latest', 'all', 'default' or a path to a ptxas")
    if text.count(".") == 2:
        if text not in _BY_VERSION:
            near = [r.version for r in RELEASES if r.key[:2] == _vt(text)[:2]]
            hint = f" (known {text.rsplit('.', 1)[0]} releases: {', '.join(near)})" if near else ""
            raise ToolchainError(f"--ptxas {spec}: {text} is not a known ptxas release{hint}; "
                                 "`fuzzptx toolchains` lists them")
        return text
    matches = [r.version for r in RELEASES if r.key[:2] == _vt(text)]
    if not matches:
        raise ToolchainError(f"--ptxas {spec}: no known ptxas release {text}.x; `fuzzptx toolchains` lists them")
    return matches[-1]


def _range(text: str, spec: str) -> list[str]:
    lo, hi = text.split("-", 1)
    for bound in (lo, hi):
        if not _RELEASE_RE.fullmatch(bound):
            raise ToolchainError(f"--ptxas {spec}: range bound {bound!r} is not a release like 12.4 or 13.5.37")
    lo_k, hi_k = _vt(lo), _vt(hi)
    if lo_k[:len(hi_k)] > hi_k[:len(lo_k)]:
        raise ToolchainError(f"--ptxas {spec}: range {text} runs backwards")
    out = [r.version for r in RELEASES if r.key[:len(lo_k)] >= lo_k and r.key[:len(hi_k)] <= hi_k]
    if not out:
        raise ToolchainError(f"--ptxas {spec}: no known ptxas release in {text}")
    return out


def parse_spec(spec: str) -> tuple[str | Path, ...]:
    """The releases (strings) and ptxas paths a SPEC names, in order, each once.

    Reads no disk beyond telling a path from a release; ``resolve`` finds the binaries."""
    items = [s.strip() for s in spec.split(",")]
    if not spec.strip() or any(not s for s in items):
        raise ToolchainError(f"--ptxas {spec!r}: empty release in the list")
    out: list[str | Path] = []
    for item in items:
        if item == "all":
            out += [r.version for r in RELEASES]
        elif item == "latest":
            out.append(latest().version)
        elif item == "default":
            out.append(PINNED_VERSION)
        elif _looks_like_path(item):
            out.append(Path(item).expanduser())
        elif "-" in item:
            out += _range(item, spec)
        else:
            out.append(_one_release(item, spec))
    return tuple(dict.fromkeys(out))


# ---------------------------------------------------------------- finding binaries

def cache_dir() -> Path:
    """Where fetched releases live: ``$FUZZPTX_CACHE/toolchains``, else
    ``$XDG_CACHE_HOME/fuzzptx/toolchains``, else ``~/.cache/fuzzptx/toolchains``."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root).expanduser() / "toolchains"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "fuzzptx" / "toolchains"


def _packed_dir() -> Path | None:
    d = os.environ.get(TOOLCHAINS_ENV)
    return Path(d).expanduser() if d else None


def _exe(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def _checked_version(ptxas: Path) -> str:
    try:
        return _version_of(str(ptxas))
    except PtxasNotFound as e:
        raise ToolchainError(str(e)) from None


def _ptx_max_of(release: str) -> tuple[int, int] | None:
    r = known(release)
    return r.ptx_max if r else None


def _from_dir(d: Path, release: str, source: str) -> Toolchain | None:
    """The toolchain in ``d/<release>/`` if there is one; an impostor is an error."""
    ptxas = d / release / "ptxas"
    if not _exe(ptxas):
        return None
    got = _checked_version(ptxas)
    if got != release:
        raise ToolchainError(f"{ptxas} is ptxas {got}, not {release} (remove that directory)")
    nvd = d / release / "nvdisasm"
    return Toolchain(release, ptxas, nvd if _exe(nvd) else None, _ptx_max_of(release), source)


def _pinned(release: str) -> Toolchain | None:
    """The ptxas fuzzptx judges with by default (the pinned package's, or ``$FUZZPTX_PTXAS`` on a
    machine without the wheel, such as a GPU node with CUDA installed), when it is ``release``."""
    try:
        p = find_ptxas()
    except PtxasNotFound:
        return None
    if not _exe(p) or _checked_version(p) != release:
        return None
    return Toolchain(release, p, None, _ptx_max_of(release), "pinned package")


def _local(release: str) -> Toolchain | None:
    """Without the network: the pinned package, the packed directory, the cache."""
    tc = _pinned(release)
    packed = _packed_dir()
    if tc is None and packed is not None:
        tc = _from_dir(packed, release, "FUZZPTX_TOOLCHAINS dir")
    return tc or _from_dir(cache_dir(), release, "cache")


def _from_path(p: Path) -> Toolchain:
    if not _exe(p):
        raise ToolchainError(f"--ptxas {p}: not an executable ptxas")
    release = _checked_version(p)
    nvd = p.parent / "nvdisasm"
    return Toolchain(release, p.resolve(), nvd.resolve() if _exe(nvd) else None, _ptx_max_of(release), "path")


def resolve(spec: str, *, fetch_missing: bool = True) -> tuple[Toolchain, ...]:
    """The toolchains a SPEC names, fetching releases found nowhere local unless told not to."""
    out = []
    for item in parse_spec(spec):
        if isinstance(item, Path):
            out.append(_from_path(item))
            continue
        tc = _local(item)
        if tc is None:
            if not fetch_missing:
                raise ToolchainError(f"ptxas {item} is not cached: run `fuzzptx toolchains --fetch {item}`"
                                     + (f" (or add it to {TOOLCHAINS_ENV}={_packed_dir()})" if _packed_dir() else ""))
            tc = fetch(item)
        out.append(tc)
    return tuple(out)


# ---------------------------------------------------------------- fetching

def _pip_download(requirement: str, dest: Path) -> Path:
    """Download one wheel (no dependencies) into ``dest``; its path."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--retries", "2", "--timeout", "30", "-q",
           "-d", str(dest), requirement]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"pip download {requirement}: timed out after 15 minutes") from None
    if proc.returncode != 0:
        raise _pip_error(requirement, proc.stderr)
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise ToolchainError(f"pip download {requirement}: expected one wheel, got {len(wheels)}")
    return wheels[0]


def _pip_error(requirement: str, stderr: str) -> ToolchainError:
    """One line for a failed ``pip download``: offline, no such release, or pip's last word.

    Offline, pip finds no versions at all ("from versions: none", after connection
    warnings when it retries); a release the index lacks comes with the versions it has."""
    offline = re.search(r"NewConnectionError|Failed to establish|Network is unreachable|"
                        r"Temporary failure in name resolution|Name or service not known|"
                        r"ProxyError|ConnectTimeout|Max retries exceeded|from versions: none\)", stderr)
    if offline:
        return ToolchainError(f"cannot download {requirement}: the package index is unreachable or has no "
                              f"wheel of it for this platform (offline? run `fuzzptx toolchains --pack DIR SPEC` "
                              f"where there is internet and set {TOOLCHAINS_ENV}=DIR here)")
    if "No matching distribution" in stderr or "Could not find a version" in stderr:
        return ToolchainError(f"cannot download {requirement}: the package index has no such release")
    last = [line for line in stderr.splitlines() if line.strip()][-1:] or ["(no message)"]
    return ToolchainError(f"pip download {requirement} failed: {last[0].strip()}")


def _unzip_one(wheel: Path, member: str, out: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        try:
            info = z.getinfo(member)
        except KeyError:
            raise ToolchainError(f"{wheel.name} has no {member}") from None
        with z.open(info) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    out.chmod(0o755)


def fetch(release: str) -> Toolchain:
    """Release ``release`` in the cache, downloading its wheel(s) when absent.

    Unpacks into a temporary directory beside the cache entry and renames it into place,
    so an interrupted fetch leaves nothing a later run would take for a toolchain."""
    rel = known(release)
    if rel is None:
        raise ToolchainError(f"{release} is not a known ptxas release; `fuzzptx toolchains` lists them")
    root = cache_dir()
    have = _from_dir(root, release, "cache")
    if have is not None:
        return have
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{release}-", dir=root))
    try:
        wheel = _pip_download(f"{rel.package}=={release}", tmp / "wheel-ptxas")
        _unzip_one(wheel, rel.ptxas_member, tmp / "ptxas")
        if rel.nvdisasm_package:
            wheel = _pip_download(f"{rel.nvdisasm_package}=={release}", tmp / "wheel-nvdisasm")
            _unzip_one(wheel, _NVDISASM_IN_WHEEL, tmp / "nvdisasm")
        for d in tmp.glob("wheel-*"):
            shutil.rmtree(d)
        got = _checked_version(tmp / "ptxas")
        if got != release:
            raise ToolchainError(f"the {rel.package}=={release} wheel holds ptxas {got}, not {release}")
        tmp.chmod(0o755)  # mkdtemp's 0700 would hide a cache or packed directory from others
        try:
            tmp.rename(root / release)
        except OSError:  # another process put it there first
            if _from_dir(root, release, "cache") is None:
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    tc = _from_dir(root, release, "cache")
    assert tc is not None
    return tc


def pack(dest: Path, spec: str) -> list[Path]:
    """Copy the toolchains of ``spec`` into ``dest/<release>/`` (fetching what is missing),
    a directory to carry to a machine without internet and name in ``$FUZZPTX_TOOLCHAINS``."""
    make_dir(dest, what="pack directory")
    written = []
    for tc in resolve(spec):
        final = dest / tc.release
        if _exe(final / "ptxas") and _checked_version(final / "ptxas") == tc.release:
            written.append(final)
            continue
        tmp = Path(tempfile.mkdtemp(prefix=f".{tc.release}-", dir=dest))
        try:
            shutil.copy2(tc.ptxas, tmp / "ptxas")
            if tc.nvdisasm is not None:
                shutil.copy2(tc.nvdisasm, tmp / "nvdisasm")
            tmp.chmod(0o755)
            if final.exists():
                shutil.rmtree(final)
            tmp.rename(final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        written.append(final)
    return written


# ---------------------------------------------------------------- facts read off a binary

@functools.cache
def _targets(ptxas: str) -> frozenset[str]:
    out = subprocess.run([ptxas, "--help"], capture_output=True, text=True, timeout=30, check=False).stdout
    m = re.search(r"--gpu-name.*?Allowed values for this option:(.*?)(?:Default value|\n\s*\n--)", out, re.DOTALL)
    if not m:
        raise ToolchainError(f"{ptxas}: no --gpu-name values in its --help")
    return frozenset(re.findall(r"'(sm_\w+)'", m[1]))


def targets(ptxas: str | Path) -> frozenset[str]:
    """The sm_* targets a ptxas accepts (12.x still takes sm_70; 12.4 has no sm_100a)."""
    return _targets(str(ptxas))


# PTX ISA versions that exist (there is no 8.9: 8.8 is followed by 9.0).
_PROBE_VERSIONS = tuple((8, m) for m in range(9)) + tuple((9, m) for m in range(10))


def measure_ptx_max(ptxas: str | Path) -> tuple[int, int]:
    """The newest PTX ``.version`` a ptxas accepts on a trivial sm_90a kernel (how the
    table's measured rows were made)."""
    best = None
    with tempfile.TemporaryDirectory(prefix="fuzzptx-ptxmax-") as d:
        src = Path(d) / "v.ptx"
        for v in _PROBE_VERSIONS:
            src.write_text(f".version {v[0]}.{v[1]}\n.target sm_90a\n.address_size 64\n"
                           ".visible .entry k() { ret; }\n")
            rc = subprocess.run([str(ptxas), "-arch=sm_90a", str(src), "-o", os.devnull],
                                capture_output=True, timeout=60, check=False).returncode
            if rc == 0:
                best = v
    if best is None:
        raise ToolchainError(f"{ptxas}: accepts no PTX version from 8.0 on for sm_90a")
    return best


def local_nvdisasm() -> Path | None:
    """The newest nvdisasm already here (packed directory or cache), without fetching: it reads
    the cubins of every older release, so a SASS judge can use it where the pinned wheel has none."""
    for r in reversed(RELEASES):
        try:
            tc = _local(r.version)
        except ToolchainError:
            continue
        if tc is not None and tc.nvdisasm is not None:
            return tc.nvdisasm
    return None


# ---------------------------------------------------------------- listing

def status() -> list[dict]:
    """One row per known release: where ``resolve`` would find it now (without fetching)."""
    rows = []
    for r in RELEASES:
        try:
            tc = _local(r.version)
        except ToolchainError:
            tc = None
        state = {"pinned package": "pinned", "FUZZPTX_TOOLCHAINS dir": TOOLCHAINS_ENV,
                 "cache": "cached"}.get(tc.source) if tc else "fetchable"
        rows.append({
            "release": r.version, "package": r.package,
            "ptx_max": f"{r.ptx_max[0]}.{r.ptx_max[1]}" if r.ptx_max else None,
            "nvdisasm": (tc.nvdisasm is not None) if tc else r.has_nvdisasm,
            "status": state, "ptxas": str(tc.ptxas) if tc else None,
        })
    return rows


def _table(rows: Iterable[dict]) -> str:
    lines = [f"{'release':<9} {'PTX max':<8} {'nvdisasm':<8} {'status':<18} path"]
    for row in rows:
        lines.append(f"{row['release']:<9} {row['ptx_max'] or '?':<8} {'yes' if row['nvdisasm'] else '-':<8} "
                     f"{row['status']:<18} {row['ptxas'] or row['package']}")
    return "\n".join(lines) + "\n"


def _toolchain_row(tc: Toolchain) -> dict:
    return {"release": tc.release, "ptxas": str(tc.ptxas),
            "nvdisasm": str(tc.nvdisasm) if tc.nvdisasm else None,
            "ptx_max": f"{tc.ptx_max[0]}.{tc.ptx_max[1]}" if tc.ptx_max else None, "source": tc.source}


def main_toolchains(argv: Sequence[str] | None = None) -> int:
    """``fuzzptx toolchains [--fetch SPEC | --pack DIR SPEC] [--json]``."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="fuzzptx toolchains",
        description="list the ptxas releases fuzzptx knows (PTX ISA max, where each is), fetch them, "
                    f"or pack them into a directory for a machine without internet ({TOOLCHAINS_ENV}=DIR)")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--fetch", metavar="SPEC", help="download releases into the cache, e.g. 12.9.86,13.5.37")
    group.add_argument("--pack", nargs=2, metavar=("DIR", "SPEC"), help="copy releases into DIR/<release>/")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    args = ap.parse_args(list(argv) if argv is not None else None)
    if args.fetch:
        rows = [_toolchain_row(tc) for tc in resolve(args.fetch)]
    elif args.pack:
        dest = Path(args.pack[0])
        rows = [_toolchain_row(_from_dir(dest, d.name, "packed")) for d in pack(dest, args.pack[1])]
    else:
        rows = status()
        if args.json:
            print(json.dumps({"cache": str(cache_dir()), TOOLCHAINS_ENV: os.environ.get(TOOLCHAINS_ENV),
                              "pinned": PINNED_VERSION, "releases": rows}, indent=1))
        else:
            print(f"cache: {cache_dir()}   {TOOLCHAINS_ENV}: {os.environ.get(TOOLCHAINS_ENV) or '(unset)'}   "
                  f"pinned: {PINNED_VERSION}")
            print(_table(rows), end="")
        return 0
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for row in rows:
            print(f"{row['release']:<9} {row['source']:<22} {row['ptxas']}"
                  + (f"  (+ {row['nvdisasm']})" if row["nvdisasm"] else ""))
        if args.pack:
            print(f"carry {args.pack[0]} and set {TOOLCHAINS_ENV}={args.pack[0]} there")
    return 0
