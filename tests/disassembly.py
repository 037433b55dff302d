"""The functions of an x86-64 executable as lists of instructions, from GNU objdump's disassembly,
normalized so that two functions compiled from one template compare equal when their code is
the same: alignment padding (nops) is dropped and branch targets inside the function become
instruction numbers (encodings of different lengths shift the byte offsets and the padding),
RIP-relative displacements and objdump's address comments are dropped (the functions lie at
different addresses).
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

_HEADER = re.compile(r"^([0-9a-f]+) <(.*)>:$")
_LINE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+)\t(.*)$")
_TARGET = re.compile(r"<(.*)\+(0x[0-9a-f]+)>")
# Padding: nop in its sizes and prefixed forms, and the two-byte xchg %ax,%ax.
_PADDING = re.compile(r"(^|\s)nop[wl]?(\s|$)|^xchg %ax,%ax$")


@dataclass
class Instruction:
    offset: int  # bytes from the function's start
    first_byte: int  # the encoding's first byte (0x62: EVEX; 0xc4, 0xc5: VEX)
    text: str  # mnemonic and operands as objdump prints them
    encoding: bytes = b""  # the instruction's bytes


def functions(exe: Path) -> dict[str, list[Instruction]]:
    """Every function of ``exe`` (demangled name) with its instructions in address order."""
    dump = subprocess.run(["objdump", "-d", "-C", "--wide", str(exe)], capture_output=True, text=True, check=True)
    result: dict[str, list[Instruction]] = {}
    start, body = 0, None
    for line in dump.stdout.splitlines():
        header = _HEADER.match(line)
        if header:
            start, body = int(header.group(1), 16), result.setdefault(header.group(2), [])
            continue
        parsed = _LINE.match(line)
        if parsed and body is not None and parsed.group(3).strip():
            address, raw, text = int(parsed.group(1), 16), parsed.group(2).split(), parsed.group(3)
            body.append(Instruction(address - start, int(raw[0], 16), " ".join(text.split()), bytes.fromhex("".join(raw))))
    return result


def normalized(name: str, code: list[Instruction]) -> list[str]:
    """The instruction texts of function ``name`` without padding, with its own branch targets as
    instruction numbers (a target on padding: the next instruction) and no address-dependent parts."""
    kept = [ins for ins in code if not _PADDING.search(ins.text)]
    index, k = {}, 0
    for ins in code:
        index[ins.offset] = k  # padding maps to the instruction after it
        if not _PADDING.search(ins.text):
            k += 1

    def target(m: re.Match) -> str:
        if m.group(1) == name and int(m.group(2), 16) in index:
            return f"<#{index[int(m.group(2), 16)]}>"
        return f"<{m.group(1)}+?>"

    texts = []
    for ins in kept:
        text = ins.text.split(" #")[0]  # objdump's comment: the address a RIP-relative operand reaches
        text = re.sub(r"-?0x[0-9a-f]+\(%rip\)", "(%rip)", text)
        text = re.sub(r"\b[0-9a-f]+ <", "<", text)  # a branch's absolute address before its symbol
        texts.append(_TARGET.sub(target, text))
    return texts
