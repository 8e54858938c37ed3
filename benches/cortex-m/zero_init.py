#!/usr/bin/env python3
"""Fails when a firmware's trace statics are not zero-initialised.

    zero_init.py ELF NAME [NAME ...]

Each NAME is the end of a static's demangled path (`trace::MAIN_RING`). The static
must be in `.bss`: zero bytes at boot, no flash. A ring or a per-context recorder
set in `.data` has its whole image (KiBs for a ring) copied from flash at boot.
"""

import subprocess
import sys

from elftools.elf.elffile import ELFFile


def demangle(names):
    out = subprocess.run(["llvm-cxxfilt"], input="\n".join(names), check=True,
                         capture_output=True, text=True).stdout
    return out.splitlines()


def main():
    path, wanted = sys.argv[1], sys.argv[2:]
    with open(path, "rb") as f:
        elf = ELFFile(f)
        sections = {i: s.name for i, s in enumerate(elf.iter_sections())}
        symbols = [s for s in elf.get_section_by_name(".symtab").iter_symbols()
                   if s["st_info"]["type"] == "STT_OBJECT" and s["st_size"] > 0]
    names = demangle([s.name for s in symbols])
    ok = True
    for want in wanted:
        found = [(n, s) for n, s in zip(names, symbols)
                 if n.split("::h")[0].endswith(want) or n.split("::h")[0].endswith(want + ".0")]
        if not found:
            print(f"{path}: no static named {want}")
            ok = False
            continue
        for name, sym in found:
            shndx = sym["st_shndx"]
            section = sections.get(shndx, str(shndx)) if isinstance(shndx, int) else shndx
            good = section == ".bss" or section.startswith(".bss.")
            print(f"{want}: {sym['st_size']} bytes in {section}{'' if good else '  <- not .bss'}")
            ok = ok and good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
