#!/usr/bin/env python3
"""Worst-case stack depth of a firmware's entry points, from its machine code.

    stack.py ELF NAME [NAME ...]

For each NAME (a substring of a function symbol, mangled as in the ELF: an
identifier such as `flush_one` or `_flightrec_record_function`), the most stack
that a call of that function can take below the stack pointer it was called with,
itself and everything it calls: each function's frame is found by following its
control flow from its entry (pushes, `sub sp`, `vpush`, pops, `add sp`, the frame
pointer's restore), and a call adds the callee's worst case to the depth at the
call. Prints the depth and the deepest chain. An indirect call or tail call (a
callback the program installs, such as a ring's buffer-ready function) is listed
with the depth at the call, to which the callee's own stack adds. Fails (exit
status 1) where there is no bound: a jump table, another write to pc, recursion,
or a depth that grows in a loop.

The hardware's exception frame (32 bytes, 104 with the FPU's registers) is not
included: it is the same with or without tracing.
"""

import re
import subprocess
import sys

from capstone import CS_ARCH_ARM, CS_MODE_MCLASS, CS_MODE_THUMB, Cs
from capstone import arm as A
from elftools.elf.elffile import ELFFile

# Condition code "always" (capstone 5 numbers ARM_CC_AL 15; 0 is "invalid").
ALWAYS = (A.ARM_CC_AL, A.ARM_CC_INVALID)


class Unbounded(Exception):
    pass


class Decoded:
    """A function's instructions by address, decoded on demand."""

    def __init__(self, cs, code, start):
        self.cs, self.code, self.start = cs, code, start
        self.cache = {}

    def __contains__(self, addr):
        return self.get(addr) is not None

    def __getitem__(self, addr):
        return self.get(addr)

    def get(self, addr):
        if addr not in self.cache:
            off = addr - self.start
            i = next(self.cs.disasm(self.code[off:off + 4], addr), None) \
                if 0 <= off < len(self.code) else None
            self.cache[addr] = i
        return self.cache[addr]


class Image:
    def __init__(self, path):
        self.cs = Cs(CS_ARCH_ARM, CS_MODE_THUMB | CS_MODE_MCLASS)
        self.cs.detail = True
        self.functions = {}  # start -> (name, size)
        with open(path, "rb") as f:
            elf = ELFFile(f)
            for s in elf.get_section_by_name(".symtab").iter_symbols():
                if s["st_info"]["type"] == "STT_FUNC" and s["st_size"]:
                    self.functions[s["st_value"] & ~1] = (s.name, s["st_size"])
            self.segments = [(seg["p_vaddr"], seg.data()) for seg in elf.iter_segments()
                             if seg["p_type"] == "PT_LOAD" and seg["p_filesz"]]
        self.frames = {}
        self.worst = {}
        self.active = set()

    def code(self, start, size):
        for base, data in self.segments:
            if base <= start and start + size <= base + len(data):
                return data[start - base:start - base + size]
        raise Unbounded(f"no code for {start:#x}")

    def containing(self, addr):
        for start, (_, size) in self.functions.items():
            if start <= addr < start + size:
                return start
        raise Unbounded(f"a call to {addr:#x}, in no function")

    def find(self, want):
        """The start of the one function whose symbol holds `want`."""
        found = [s for s, (n, _) in self.functions.items() if want in n]
        if len(found) != 1:
            raise Unbounded(f"{len(found)} functions match {want}")
        return found[0]

    def frame(self, start):
        """(the deepest point in the function itself, [(depth at the call, callee)],
        the depth of its deepest indirect call or None)."""
        if start not in self.frames:
            self.frames[start] = self.walk(start)
        return self.frames[start]

    def walk(self, start):
        """[`frame`](Image.frame), from the function's control flow."""
        name, size = self.functions[start]
        code = self.code(start, size)
        # Decoded where the control flow goes, not in one sweep: literal pools sit
        # between a function's instructions.
        insns = Decoded(self.cs, code, start)
        depth_at = {start: 0}
        calls = []
        indirect = None
        work = [(start, 0, None)]
        deepest = 0
        while work:
            addr, depth, fp = work.pop()
            in_it = 0
            while addr in insns:
                i = insns[addr]
                deepest = max(deepest, depth)
                nxt = addr + i.size
                ops = i.operands
                iid = i.id
                # Decoded one at a time, an IT block's instructions do not show
                # their condition: the IT instruction says which are conditional.
                cond = i.cc not in ALWAYS or in_it > 0
                in_it = max(in_it - 1, 0)
                if iid == A.ARM_INS_IT:
                    in_it = len(i.mnemonic) - 1
                end = False
                if iid == A.ARM_INS_PUSH or (iid == A.ARM_INS_STMDB and ops[0].reg == A.ARM_REG_SP):
                    depth += 4 * (len(ops) - (iid == A.ARM_INS_STMDB))
                elif i.writeback and "[sp" in i.op_str and iid not in (
                        A.ARM_INS_PUSH, A.ARM_INS_POP, A.ARM_INS_STMDB, A.ARM_INS_LDM):
                    # `str r11, [sp, #-4]!` pushes, `ldr r11, [sp], #4` pops.
                    step = sp_writeback(i.op_str)
                    if step is None:
                        raise Unbounded(f"{name}: {i.mnemonic} {i.op_str}")
                    if step > 0 or not cond:
                        depth += step
                elif iid == A.ARM_INS_VPUSH:
                    depth += sum(8 if self.cs.reg_name(o.reg).startswith("d") else 4 for o in ops)
                elif iid in (A.ARM_INS_SUB, A.ARM_INS_SUBW) and ops[0].reg == A.ARM_REG_SP:
                    if len(ops) == 3 and ops[1].reg == A.ARM_REG_R7 and fp is not None:
                        depth = fp + ops[2].imm
                    elif ops[-1].type == A.ARM_OP_IMM and (len(ops) == 2 or ops[1].reg == A.ARM_REG_SP):
                        depth += ops[-1].imm
                    else:
                        raise Unbounded(f"{name}: {i.mnemonic} {i.op_str}")
                elif iid in (A.ARM_INS_ADD, A.ARM_INS_ADDW) and ops[0].reg == A.ARM_REG_SP:
                    if ops[-1].type == A.ARM_OP_IMM and (len(ops) == 2 or ops[1].reg == A.ARM_REG_SP):
                        if not cond:
                            depth -= ops[-1].imm
                    else:
                        raise Unbounded(f"{name}: {i.mnemonic} {i.op_str}")
                elif iid in (A.ARM_INS_ADD, A.ARM_INS_ADDW) and ops[0].reg == A.ARM_REG_R7 \
                        and len(ops) == 3 and ops[1].reg == A.ARM_REG_SP:
                    fp = depth - ops[2].imm
                elif iid == A.ARM_INS_MOV and ops[0].reg == A.ARM_REG_R7 and ops[1].reg == A.ARM_REG_SP:
                    fp = depth
                elif iid == A.ARM_INS_MOV and ops[0].reg == A.ARM_REG_SP:
                    if ops[1].reg != A.ARM_REG_R7 or fp is None:
                        raise Unbounded(f"{name}: {i.mnemonic} {i.op_str}")
                    depth = fp
                elif iid in (A.ARM_INS_POP, A.ARM_INS_LDM) and (iid == A.ARM_INS_POP or ops[0].reg == A.ARM_REG_SP):
                    regs = [o.reg for o in ops[(iid == A.ARM_INS_LDM):]]
                    if not cond:
                        depth -= 4 * len(regs)
                        end = A.ARM_REG_PC in regs
                elif iid == A.ARM_INS_VPOP:
                    if not cond:
                        depth -= sum(8 if self.cs.reg_name(o.reg).startswith("d") else 4 for o in ops)
                elif iid in (A.ARM_INS_BL, A.ARM_INS_BLX):
                    if ops[0].type != A.ARM_OP_IMM:
                        indirect = max(indirect or 0, depth)
                    else:
                        calls.append((depth, self.containing(ops[0].imm & ~1)))
                elif iid == A.ARM_INS_BX:
                    if ops[0].reg != A.ARM_REG_LR:  # an indirect tail call
                        indirect = max(indirect or 0, depth)
                    end = not cond
                elif iid in (A.ARM_INS_TBB, A.ARM_INS_TBH):
                    raise Unbounded(f"{name}: a jump table")
                elif iid in (A.ARM_INS_B, A.ARM_INS_CBZ, A.ARM_INS_CBNZ):
                    target = ops[-1].imm
                    if start <= target < start + size:
                        if depth_at.get(target, -1) < depth:
                            if target in depth_at and depth > 4096:
                                raise Unbounded(f"{name}: the stack grows in a loop")
                            depth_at[target] = depth
                            work.append((target, depth, fp))
                    else:
                        calls.append((depth, self.containing(target)))  # a tail call
                    end = iid == A.ARM_INS_B and not cond
                elif ops and ops[0].type == A.ARM_OP_REG and ops[0].reg == A.ARM_REG_PC:
                    raise Unbounded(f"{name}: a write to pc ({i.mnemonic} {i.op_str})")
                if end:
                    break
                if nxt in depth_at and depth_at[nxt] >= depth:
                    break
                if nxt in depth_at:
                    depth_at[nxt] = depth
                addr = nxt
        return deepest, calls, indirect

    def worst_case(self, start):
        """(bytes, [(function, its own depth at the call or its deepest point)])."""
        if start in self.worst:
            return self.worst[start]
        name = self.functions[start][0]
        if start in self.active:
            raise Unbounded(f"recursion through {name}")
        self.active.add(start)
        try:
            deepest, calls, _ = self.frame(start)
            best = (deepest, [(name, deepest)])
            for depth, callee in calls:
                sub, chain = self.worst_case(callee)
                if depth + sub > best[0]:
                    best = (depth + sub, [(name, depth)] + chain)
        finally:
            self.active.discard(start)
        self.worst[start] = best
        return best

    def indirect_calls(self, start, depth=0, seen=None):
        """[(function, depth at its indirect call below the entry's SP)] reachable
        from `start`, each function once."""
        seen = set() if seen is None else seen
        if start in seen:
            return []
        seen.add(start)
        _, calls, indirect = self.frame(start)
        found = [] if indirect is None else [(self.functions[start][0], depth + indirect)]
        for d, callee in calls:
            found += self.indirect_calls(callee, depth + d, seen)
        return found


def sp_writeback(op_str):
    """What an access with writeback to `sp` takes off the stack (a negative
    number gives back): `[sp, #-4]!` takes 4, `[sp], #4` gives 4 back."""
    m = re.search(r"\[sp, #(-?(?:0x)?[0-9a-f]+)\]!", op_str)
    if m:
        return -int(m.group(1), 0)
    m = re.search(r"\[sp\], #(-?(?:0x)?[0-9a-f]+)$", op_str)
    if m:
        return -int(m.group(1), 0)
    return None


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    image = Image(sys.argv[1])
    failed = False
    for want in sys.argv[2:]:
        try:
            start = image.find(want)
            total, chain = image.worst_case(start)
        except Unbounded as e:
            print(f"{want}: no bound: {e}", file=sys.stderr)
            failed = True
            continue
        names = short(demangle([n for n, _ in chain]))
        path = " > ".join(f"{n} ({d} B)" for n, (_, d) in zip(names, chain))
        print(f"{want}: {total} B at most ({path})")
        indirect = sorted(set(image.indirect_calls(start)), key=lambda x: -x[1])
        for n, (_, d) in zip(short(demangle([n for n, _ in indirect])), indirect):
            print(f"  plus the stack of an indirect call in {n}, made {d} B down")
    sys.exit(1 if failed else 0)


# The escapes of Rust's legacy mangling, which llvm-cxxfilt leaves in the names.
ESCAPES = (("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$C$", ","), ("$RF$", "&"),
           ("$BP$", "*"), ("$u7b$", "{"), ("$u7d$", "}"), ("..", "::"))


def demangle(names):
    """`names` demangled by llvm-cxxfilt, hashes dropped (as they are if it is missing)."""
    try:
        out = subprocess.run(["llvm-cxxfilt"], input="\n".join(names), capture_output=True,
                             text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return names
    out = [n.rsplit("::h", 1)[0] if "::h" in n else n for n in out]
    for escape, char in ESCAPES:
        out = [n.replace(escape, char) for n in out]
    return [n[1:] if n.startswith("_<") else n for n in out]


def short(names):
    """Each path's last two segments (`Recorder::acquire`,
    `LinkWriter<W>::flush_one`); a trait method's (`<A as B>::f`) as it is."""

    def segments(name):
        parts, depth, start = [], 0, 0
        for i, c in enumerate(name):
            depth += (c == "<") - (c == ">")
            if depth == 0 and name.startswith("::", i):
                parts.append(name[start:i])
                start = i + 2
        return parts + [name[start:]]

    def tidy(segment):
        # An inherent impl in another module than its type's demangles as a
        # segment `_<impl path::Type>`: the type's name.
        if segment.startswith("_<impl ") and segment.endswith(">"):
            return segments(segment[len("_<impl "):-1])[-1]
        return segment

    return [n if n.startswith("<") else "::".join(tidy(s) for s in segments(n)[-2:])
            for n in names]


if __name__ == "__main__":
    main()
