"""Instructions per MAC of the innermost loops of an AArch64 object file, from its disassembly.

A loop is a backward branch and everything from its target up to it. For each loop that holds
MAC instructions, prints its instruction count, the MAC instructions and the MACs they do.
    python3 scripts/count_loop_instructions.py OBJECT MNEMONIC=MACS [MNEMONIC=MACS ...]
e.g. `... gemm_u8s8_dot.o sdot=16` (one sdot on .4s lanes does 16 MACs). The innermost loop is
the shortest one listed. Needs aarch64-linux-gnu-objdump (binutils-aarch64-linux-gnu).
"""
from __future__ import annotations

import re
import subprocess
import sys


def instructions(obj: str) -> list[tuple[int, str]]:
    dis = subprocess.run(["aarch64-linux-gnu-objdump", "-d", "--no-show-raw-insn", obj], capture_output=True,
                         text=True, check=True).stdout
    out = []
    for line in dis.splitlines():
        m = re.match(r"\s+([0-9a-f]+):\s+(\S+)\s*(.*)", line)
        if m:
            out.append((int(m.group(1), 16), m.group(2) + " " + m.group(3)))
    return out


def main(obj: str, macs_per: dict[str, int]) -> None:
    insns = instructions(obj)
    for addr, text in insns:
        branch = re.match(r"(b|b\.\w+|cbn?z|tbn?z)\s.*?\b([0-9a-f]+) <", text)
        if not branch or int(branch.group(2), 16) >= addr:
            continue
        body = [t.split()[0] for a, t in insns if int(branch.group(2), 16) <= a <= addr]
        counts = {op: body.count(op) for op in macs_per}
        macs = sum(counts[op] * n for op, n in macs_per.items())
        if macs:
            print(f"loop {branch.group(2)}-{addr:x}: {len(body)} instructions, {counts}, {macs} MACs, "
                  f"{len(body) / macs:.3f} instructions/MAC")


if __name__ == "__main__":
    main(sys.argv[1], {k: int(v) for k, v in (a.split("=") for a in sys.argv[2:])})
