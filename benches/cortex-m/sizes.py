#!/usr/bin/env python3
"""Flash and RAM of firmware ELFs, and where the flash goes by crate.

    sizes.py LLVM_NM NAME=ELF [NAME=ELF ...]

For each ELF: flash (.text + .rodata + .data + vector table: every allocated,
non-writable or initialised section, as llvm-size's text + data) and RAM (.data +
.bss + stack reservations), then the symbols of `llvm-nm --print-size` grouped by
the crate their demangled path starts with. Functions inlined by LTO count where they
were inlined, so a crate's share is what remains out of line.
"""

import re
import subprocess
import sys

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile


def flash_ram(path):
    flash = ram = 0
    with open(path, "rb") as f:
        for sec in ELFFile(f).iter_sections():
            flags = sec["sh_flags"]
            if not flags & SH_FLAGS.SHF_ALLOC or not sec["sh_size"]:
                continue
            loaded = sec["sh_type"] != "SHT_NOBITS"
            writable = flags & SH_FLAGS.SHF_WRITE
            if loaded:
                flash += sec["sh_size"]
            if writable:
                ram += sec["sh_size"]
    return flash, ram


def crate_of(name):
    name = name.lstrip("<&*").replace("_$LT$", "<")
    m = re.match(r"(?:dyn |impl )?([A-Za-z_][A-Za-z0-9_]*)::", name)
    if m:
        return m.group(1)
    return "(no crate: C, asm or #[no_mangle])"


def by_crate(nm, path):
    out = subprocess.run([nm, "--print-size", "--size-sort", "-C", path],
                         check=True, capture_output=True, text=True).stdout
    crates = {}
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) < 4 or parts[2] not in "tTrRdD":
            continue
        size = int(parts[1], 16)
        crates[crate_of(parts[3])] = crates.get(crate_of(parts[3]), 0) + size
    return sorted(crates.items(), key=lambda kv: -kv[1])


def main():
    nm = sys.argv[1]
    elfs = [a.split("=", 1) for a in sys.argv[2:]]
    print("| firmware | flash bytes | RAM bytes (static) |")
    print("|---|---:|---:|")
    for name, path in elfs:
        flash, ram = flash_ram(path)
        print(f"| {name} | {flash} | {ram} |")
    for name, path in elfs:
        print(f"\nflash by crate (out-of-line symbols), {name}:\n")
        print("| crate | bytes |")
        print("|---|---:|")
        for crate, size in by_crate(nm, path):
            print(f"| {crate} | {size} |")


if __name__ == "__main__":
    main()
