"""The encodings of the AMX instructions the amx kernels use, checked byte by byte from a disassembly.

Every one is VEX-encoded with the three-byte prefix C4 (Intel SDM vol. 2, the AMX instructions; the same
bytes as binutils' and LLVM's assembler tests): map 0F38 (mmmmm = 00010), W0, L0 (VEX.128), and
  ldtilecfg m512     VEX.128.NP.0F38.W0 49 /0 (memory)
  tilerelease        VEX.128.NP.0F38.W0 49 C0
  tilezero tmm       VEX.128.F2.0F38.W0 49 11:rrr:000
  tileloadd tmm, m   VEX.128.F2.0F38.W0 4B, ModRM r/m = 100 (a SIB byte: base + index stride)
  tilestored m, tmm  VEX.128.F3.0F38.W0 4B, ModRM r/m = 100
  tdpbusd C, A, B    VEX.128.66.0F38.W0 5E 11:C:A, VEX.vvvv = B inverted
(pp: 00 NP, 01 66, 10 F3, 11 F2). The neighbours of tdpbusd differ only in pp: tdpbuud (NP), tdpbsud (F3), tdpbssd
(F2), which treat A or B as the other signedness, so pp is what makes it u8 x s8.
"""
from __future__ import annotations

from dataclasses import dataclass

# mnemonic: (pp, opcode, register form (ModRM mod = 11), ModRM reg field required or None, ModRM r/m required or None)
_FORMS = {
    "ldtilecfg": (0b00, 0x49, False, 0, None),
    "tilerelease": (0b00, 0x49, True, 0, 0),
    "tilezero": (0b11, 0x49, True, None, 0),
    "tileloadd": (0b11, 0x4B, False, None, 0b100),
    "tilestored": (0b10, 0x4B, False, None, 0b100),
    "tdpbusd": (0b01, 0x5E, True, None, None),
}
MNEMONICS = tuple(_FORMS)


def is_tile_instruction(mnemonic: str) -> bool:
    """Whether an objdump mnemonic is an AMX instruction (these, and the others: sttilecfg, tdpbssd, ...)."""
    return mnemonic.startswith(("tdp", "tile", "ldtilecfg", "sttilecfg"))


@dataclass
class TileOperands:
    """tdpbusd's tiles: C (the accumulator, ModRM reg), A (uint8, ModRM r/m), B (int8, VEX.vvvv)."""
    c: int
    a: int
    b: int


def encoding_error(mnemonic: str, code: bytes) -> str | None:
    """Why ``code`` is not the encoding of ``mnemonic`` described above, or None when it is."""
    if mnemonic not in _FORMS:
        return f"{mnemonic} is not one of the tile instructions the amx kernels use"
    pp, opcode, register_form, reg, rm = _FORMS[mnemonic]
    if len(code) < 5 or code[0] != 0xC4:
        return "not a three-byte VEX prefix (C4)"
    p0, p1, op, modrm = code[1], code[2], code[3], code[4]
    if p0 & 0x1F != 0b00010:
        return f"map {p0 & 0x1F:05b}, not 0F38"
    if not p0 & 0x80:
        return "VEX.R set: a tile register past tmm7"
    if p1 & 0x80:
        return "VEX.W1"
    if p1 & 0x04:
        return "VEX.L1 (256-bit)"
    if p1 & 0x03 != pp:
        return f"pp {p1 & 0x03:02b}, {mnemonic} has {pp:02b}"
    if op != opcode:
        return f"opcode {op:#04x}, {mnemonic} has {opcode:#04x}"
    if mnemonic != "tdpbusd" and (p1 >> 3) & 0x0F != 0x0F:
        return "VEX.vvvv must be 1111 (unused)"
    if mnemonic == "tdpbusd" and not p1 & 0x40:
        return "VEX.vvvv names a tile register past tmm7"
    if (modrm >> 6 == 0b11) != register_form:
        return "register form expected" if register_form else "memory form expected"
    if register_form and not p0 & 0x20:
        return "VEX.B set: a tile register past tmm7"
    if reg is not None and (modrm >> 3) & 7 != reg:
        return f"ModRM reg {(modrm >> 3) & 7}, {reg} expected"
    if rm is not None and modrm & 7 != rm:
        return f"ModRM r/m {modrm & 7}, {rm} expected"
    return None


def tdpbusd_operands(code: bytes) -> TileOperands:
    """The tiles of a tdpbusd whose encoding passed encoding_error."""
    return TileOperands(c=(code[4] >> 3) & 7, a=code[4] & 7, b=(~code[2] >> 3) & 7)
