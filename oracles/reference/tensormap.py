"""Tensor maps a kernel builds itself: ``tensormap.replace`` and ``tensormap.cp_fenceproxy``.

Triton's device-made descriptors (``tl.make_tensor_descriptor``) build each map in shared memory:
zero its 128 bytes, ``tensormap.replace.tile.FIELD.shared::cta.b1024.bNN [map], (ord,) value`` for
every field, ``tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu`` the 128
bytes to global scratch, ``fence.proxy.tensormap::generic.acquire``, then copy through the global
address.  The reference never reads a map's bytes (the driver's encoding is opaque): it keeps the
fields of each map object by (space, address), and a tensor copy through a global address holding
one reads the description there (``tma._tensor_operand``); the 128 bytes the copy writes to global
memory read as undefined (the GPU writes the driver's encoding there).

Field encodings are the PTX ISA's (tensormap.replace): ``rank`` holds the rank less one;
``global_stride`` ord i is the byte stride of dimension i + 1 (dimension 0 is dense);
``elemtype`` is the device's data-type code (three codes differ from the driver's enum:
``DEVICE_TO_DRIVER_TYPE``), ``swizzle_mode`` and ``interleave_layout`` the driver's order.  A
field never replaced since the object's first ``replace`` is 0, as in the zeroed bytes every
Triton kernel starts from (a store into an object's bytes does not reset it: not modelled).
Not modelled (``Unsupported``): ``.im2col`` maps, ``swizzle_atomicity``, a copy of other than
128 bytes, a map used before its rank, type and global address were set.
"""
from __future__ import annotations

import numpy as np

from fuzzptx.ptx.ir import Addr, Imm
from fuzzptx.program import TMAP_INTERLEAVES, TMAP_OOB, TMAP_SWIZZLES, TMAP_TYPES, TensorMap

from .errors import BadAddress, Undefined, Unsupported
from .mem_ops import _address
from .values import U64, Shadow

# the device's elemtype code (tensormap.replace) -> the driver's CUtensorMapDataType (TMAP_TYPES order)
DEVICE_TO_DRIVER_TYPE = {8: 10, 9: 8, 10: 9}
OBJECT_BYTES = 128
_ORDERED = ("box_dim", "global_dim", "global_stride", "element_stride")
_SCALAR = ("global_address", "rank", "elemtype", "interleave_layout", "swizzle_mode", "fill_mode")


def _objects(m) -> dict[tuple[str, int], dict]:
    t = getattr(m, "tensormap_objects", None)
    if t is None:
        t = m.tensormap_objects = {}
    return t


def _space(ins) -> str:
    if "shared::cta" in ins.modifiers or "shared" in ins.modifiers:
        return "shared"
    if "global" in ins.modifiers:
        return "global"
    raise Unsupported.at(ins, f"{ins.opcode}: the map's state space must be .global or .shared::cta")


def h_tensormap(m, f, ins, act):
    mods = ins.modifiers
    if mods and mods[0] == "replace":
        _replace(m, f, ins, act)
    elif mods and mods[0] == "cp_fenceproxy":
        _copy(m, f, ins, act)
    else:
        raise Unsupported.at(ins, f"{ins.opcode} is not supported by the reference")


def _replace(m, f, ins, act) -> None:
    mods = ins.modifiers
    if "tile" not in mods:
        raise Unsupported.at(ins, f"{ins.opcode}: only .tile maps are modelled")
    fld = next((x for x in mods if x in _ORDERED + _SCALAR), None)
    if fld is None:
        raise Unsupported.at(ins, f"{ins.opcode}: this field is not modelled")
    ops = ins.operands
    if not ops or not isinstance(ops[0], Addr):
        raise Unsupported.at(ins, f"{ins.opcode} needs [map address]")
    space = _space(ins)
    idx, addr, pvar = _address(m, f, ins, ops[0], act)
    if pvar is not None or addr is None:
        raise Unsupported.at(ins, f"{ins.opcode}: a map in a .param variable")
    t = "u64" if ins.opcode.endswith("b64") else "u32"
    ordinal = None
    if fld in _ORDERED:
        if len(ops) != 3 or not isinstance(ops[1], Imm):
            raise Unsupported.at(ins, f"{ins.opcode} needs [map], ord, value with an immediate ord")
        ordinal = int(ops[1].value)
        if not 0 <= ordinal < 5:
            raise BadAddress.at(ins, f"{ins.opcode}: ord {ordinal} is outside 0..4")
    bits, sh = m.read(f, ops[-1], t, ins)
    if sh is not None and sh.nonexact()[idx].any():
        raise Undefined(f"line {ins.loc.line if ins.loc else '?'}: {ins.opcode} with an undefined value")
    table = _objects(m)
    for j, a in enumerate(addr.tolist()):
        if a % 64 if space == "global" else a % 128:
            raise BadAddress.at(ins, f"{ins.opcode}: a tensor-map object at {space} {a:#x} is not "
                                     f"{64 if space == 'global' else 128}-byte aligned")
        obj = table.setdefault((space, int(a)), {})
        v = int(bits[idx[j]])
        if ordinal is None:
            obj[fld] = v
        else:
            obj.setdefault(fld, [0] * 5)[ordinal] = v


def _copy(m, f, ins, act) -> None:
    """``tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.SCOPE.sync.aligned
    [dst], [src], 128``: the object at shared ``src`` becomes the one at global ``dst``."""
    ops = ins.operands
    if len(ops) != 3 or not isinstance(ops[0], Addr) or not isinstance(ops[1], Addr) or not isinstance(ops[2], Imm):
        raise Unsupported.at(ins, f"{ins.opcode} needs [dst], [src], 128")
    if int(ops[2].value) != OBJECT_BYTES:
        raise BadAddress.at(ins, f"{ins.opcode}: size {int(ops[2].value)}, not {OBJECT_BYTES}")
    idx, dst, _ = _address(m, f, ins, ops[0], act)
    _, src, _ = _address(m, f, ins, ops[1], act)
    table = _objects(m)
    for d, s in zip(dst.tolist(), src.tolist()):
        obj = table.get(("shared", int(s) & 0xFFFFFFFF))
        if obj is None:
            raise Unsupported.at(ins, f"{ins.opcode}: shared {int(s) & 0xFFFFFFFF:#x} holds no tensor map this run "
                                      "built (tensormap.replace)")
        table[("global", int(d))] = {k: list(v) if isinstance(v, list) else v for k, v in obj.items()}
        # the bytes there are the driver's opaque encoding: any value (the GPU's scratch buffer holds it)
        words = np.arange(0, OBJECT_BYTES, 4, dtype=np.uint64)
        for region, _pos, off in m.mem.resolve("global", U64(int(d)) + words, 4, ins, "store"):
            region.write(off, 4, [(np.zeros(off.size, np.uint64), Shadow.undef(off.size, 32))])


def device_map(m, ins, addr: int) -> TensorMap | None:
    """The tensor map a copy through global ``addr`` reads, where the kernel built one there (None:
    none was copied there)."""
    obj = _objects(m).get(("global", addr))
    if obj is None:
        return None
    for need in ("rank", "elemtype", "global_address"):
        if need not in obj:
            raise Unsupported.at(ins, f"the tensor map at global {addr:#x} was used before its {need} was set")
    rank = obj["rank"] + 1
    code = obj["elemtype"]
    driver = DEVICE_TO_DRIVER_TYPE.get(code, code)
    if not 0 <= driver < len(TMAP_TYPES) or not 1 <= rank <= 5:
        raise BadAddress.at(ins, f"the tensor map at global {addr:#x}: elemtype {code} or rank {rank} is not valid")
    gaddr = obj["global_address"]
    region = next((r for r in m.buffers.values() if r.base <= gaddr < r.base + r.size), None)
    if region is None:
        raise BadAddress.at(ins, f"the tensor map at global {addr:#x}: its global address {gaddr:#x} is in no buffer")
    ordered = {k: obj.get(k, [0] * 5) for k in _ORDERED}
    swz, inter, fill = obj.get("swizzle_mode", 0), obj.get("interleave_layout", 0), obj.get("fill_mode", 0)
    if swz >= len(TMAP_SWIZZLES) or inter >= len(TMAP_INTERLEAVES) or fill >= len(TMAP_OOB):
        raise Unsupported.at(ins, f"the tensor map at global {addr:#x}: swizzle {swz}, interleave {inter} or fill "
                                  f"{fill} is not modelled")
    estrides = tuple(ordered["element_stride"][:rank])
    if 0 in estrides:
        raise Unsupported.at(ins, f"the tensor map at global {addr:#x}: an element stride never set (0) is not modelled")
    return TensorMap(f"map@{addr:#x}", region.name, TMAP_TYPES[driver], tuple(ordered["global_dim"][:rank]),
                     tuple(ordered["global_stride"][:rank - 1]), tuple(ordered["box_dim"][:rank]),
                     estrides if any(e != 1 for e in estrides) else (), gaddr - region.base,
                     TMAP_INTERLEAVES[inter], TMAP_SWIZZLES[swz], "none", TMAP_OOB[fill])


__all__ = ["h_tensormap", "device_map", "DEVICE_TO_DRIVER_TYPE"]
