#!/usr/bin/env python3
"""Counts the instructions (and cycles, from a stated per-instruction model) of
flightrec's hot paths on Cortex-M by executing the bench firmware in Unicorn, and
checks them against baseline.txt.

    run.py ELF_V6M ELF_V7EM              # check against baseline.txt
    run.py ELF_V6M ELF_V7EM --update     # rewrite baseline.txt
    run.py ELF_V6M ELF_V7EM --profile bench_flush_one_dma
                                         # where one entry's counted cycles go
    run.py ELF_V6M ELF_V7EM --user-v6m U6 --user-v7em U7
                                         # the user's-path rows too (src/user.rs,
                                         # feature user-path); --profile bench_user_*
                                         # takes U6 and U7 as ELF_V6M and ELF_V7EM

Each ELF is the bench firmware (src/) built for thumbv6m-none-eabi (run as a
Cortex-M0) or thumbv7em-none-eabihf (run as a Cortex-M4). Every run starts from a
fresh machine: the ELF's PT_LOAD segments at their virtual addresses, a stack at the
top of RAM, and the registers of src/main.rs (COUNTER returns a value 3 higher at
every read; MARK; UART_DATA; DMA_ADDR and DMA_LEN, which copies the block out of
memory as the length is written). An entry is called with n in r0 and runs until it
returns. Per-operation figures are (count at 2n - count at n) / n, so ring setup and
the entry's prologue drop out and the loop's own instructions stay in; the link's
figures count only between the marks around `LinkWriter::flush_one`, once onto the
transmit register (a store per byte) and once onto the DMA channel (two stores per
block), and check that both sinks received the very same bytes. The runs also
measure how deep the stack goes below the record path's entry and below
`LinkWriter::flush_one`; the bounds that stack.py finds in the machine code must
hold those depths, or the check fails.

Cycle model (in-order, no wait states, no pipelining of neighbouring loads):
  M0: LDR*/STR* 2; LDM/STM/PUSH/POP 1+N; POP with PC 3+N; B, BX, BLX and a taken
      conditional branch 3, not taken 1; BL 4; everything else 1 (MULS 1).
  M4: LDR* 2, LDRD 3; STR* 1, STRD 3; LDM/STM/PUSH/POP 1+N; POP or LDM with PC
      1+N+P; taken branch (B, Bcc, CBZ/CBNZ, BX, BLX, BL) 1+P, not taken 1;
      TBB/TBH 2+P; UDIV/SDIV 12 (worst case); everything else 1. P, the pipeline
      refill, is 2 (the TRM gives 1 to 3), so a taken branch costs 3.
"""

import argparse
import os
import sys

from capstone import CS_ARCH_ARM, CS_MODE_MCLASS, CS_MODE_THUMB, Cs
from elftools.elf.elffile import ELFFile
from unicorn import UC_ARCH_ARM, UC_HOOK_CODE, UC_MODE_MCLASS, UC_MODE_THUMB, Uc
from unicorn import arm_const as A

import stack

HERE = os.path.dirname(os.path.abspath(__file__))
BASELINE = os.path.join(HERE, "baseline.txt")

FLASH, FLASH_SIZE = 0x0000_0000, 256 * 1024
RAM, RAM_SIZE = 0x2000_0000, 128 * 1024
MMIO, MMIO_SIZE = 0x4000_0000, 0x1000
# The System Control Space, as plain memory: the context source reads an
# exception's priority from SHPR1-3 or the NVIC's IPR there.
SCS, SCS_SIZE = 0xE000_E000, 0x1000
# The DWT (its cycle counter CYCCNT at +4, the M4's clock on the user's path):
# CYCCNT returns a value COUNTER_STEP higher at every read; the rest is memory.
DWT, DWT_SIZE = 0xE000_1000, 0x1000
SHPR3 = 0xE000_ED20  # priorities of exceptions 12 to 15, a byte each
# Entries run as the handler of an exception: IPSR and the priority SHPR3 gives it
# (`HANDLER_PRIORITY` of the bench firmware).
HANDLER_ENTRIES = {"bench_context_pair_handler": (15, 0x80)}
RETURN = FLASH + FLASH_SIZE - 16  # LR points here; the run stops when PC gets here
COUNTER_STEP = 3
# The record path's entry, which `#[flightrec::instrument]` calls (through
# `record_function` and the global recorder).
RECORD_ENTRY = "_flightrec_record_function"
# The paths whose stack depth the runs measure, to check stack.py's bounds: the
# record path's entry, and the link's `LinkWriter::flush_one` (a symbol whose
# mangled name holds this).
PROBES = (RECORD_ENTRY, "LinkWriter$LT$W$GT$9flush_one")
LIMIT = 50_000_000  # instructions; a panic loops forever

CONDS = {"eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls",
         "ge", "lt", "gt", "le", "al"}


class Machine:
    """One fresh emulated Cortex-M with the bench firmware loaded."""

    def __init__(self, elf_path, cpu):
        self.uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
        self.uc.ctl_set_cpu_model(cpu)
        self.uc.mem_map(FLASH, FLASH_SIZE)
        self.uc.mem_map(RAM, RAM_SIZE)
        self.uc.mmio_map(MMIO, MMIO_SIZE, self._read, None, self._write, None)
        self.uc.mem_map(SCS, SCS_SIZE)
        self.uc.mmio_map(DWT, DWT_SIZE, self._dwt_read, None, self._dwt_write, None)
        self.dwt = {}
        self.cyccnt = 0
        self.timer16 = 0
        self.captured = 0
        with open(elf_path, "rb") as f:
            elf = ELFFile(f)
            for seg in elf.iter_segments():
                if seg["p_type"] == "PT_LOAD" and seg["p_filesz"]:
                    self.uc.mem_write(seg["p_vaddr"], seg.data())
        self.uc.mem_write(RETURN, b"\x00\xbe" * 4)  # bkpt, never executed
        self.counter = 0
        self.counting = False
        self.marked = False
        self.counts = {}
        self.taken = {}
        self.sizes = {}
        self.prev = None
        self.executed = 0
        self.uart = bytearray()
        self.dma = bytearray()
        self.dma_addr = 0
        self.min_sp = RAM + RAM_SIZE
        # The depth below the SP of the last call of a probed function
        # (`probes`: address -> name), while it runs: the stack it takes, measured.
        self.probes = {}
        self.probe = None
        self.probe_sp = None
        self.probe_ret = None
        self.probe_depth = {}
        self.uc.hook_add(UC_HOOK_CODE, self._code)

    def _read(self, uc, offset, size, _):
        if offset == 0:
            self.counter = (self.counter + COUNTER_STEP) & 0xFFFF_FFFF
            return self.counter
        if offset == 0x1C:
            return self.captured
        return 0

    def _dwt_read(self, uc, offset, size, _):
        if offset == 4:
            self.cyccnt = (self.cyccnt + COUNTER_STEP) & 0xFFFF_FFFF
            return self.cyccnt
        return self.dwt.get(offset, 0)

    def _dwt_write(self, uc, offset, size, value, _):
        self.dwt[offset] = value

    def _write(self, uc, offset, size, value, _):
        if offset == 4 and self.marked:
            self.counting = value != 0
            self.prev = None
        elif offset == 8:
            self.uart.append(value & 0xFF)
        elif offset == 12:
            self.dma_addr = value
        elif offset == 16:
            self.dma += bytes(uc.mem_read(self.dma_addr, value))
        elif offset == 20:
            self.counter = value & 0xFFFF_FFFF
        elif offset == 0x18 and value:
            # The 16-bit timer's capture task: CC[0] takes the counter.
            self.timer16 = (self.timer16 + COUNTER_STEP) & 0xFFFF
            self.captured = self.timer16

    def _code(self, uc, address, size, _):
        self.executed += 1
        sp = uc.reg_read(A.UC_ARM_REG_SP)
        if sp < self.min_sp:
            self.min_sp = sp
        if self.probe_sp is None and address in self.probes:
            self.probe = self.probes[address]
            self.probe_sp = sp
            self.probe_ret = uc.reg_read(A.UC_ARM_REG_LR) & ~1
        elif self.probe_sp is not None:
            if address == self.probe_ret and sp == self.probe_sp:
                self.probe_sp = None  # returned
            elif self.probe_sp - sp > self.probe_depth.get(self.probe, 0):
                self.probe_depth[self.probe] = self.probe_sp - sp
        if self.executed > LIMIT:
            uc.emu_stop()
        if not self.counting:
            return
        prev = self.prev
        if prev is not None and address != prev + self.sizes[prev]:
            self.taken[prev] = self.taken.get(prev, 0) + 1
        self.counts[address] = self.counts.get(address, 0) + 1
        self.sizes[address] = size
        self.prev = address

    def call(self, addr, n, marked=False, handler=None):
        """Runs the entry at `addr` with r0 = n; returns its r0. `handler`: the
        (exception, priority) it runs as, else thread mode."""
        self.marked = marked
        self.counting = not marked
        if handler is not None:
            exception, priority = handler
            assert 12 <= exception <= 15, "SHPR3's exceptions only"
            self.uc.mem_write(SHPR3 + exception - 12, bytes([priority]))
            self.uc.reg_write(A.UC_ARM_REG_IPSR, exception)
        self.uc.reg_write(A.UC_ARM_REG_SP, RAM + RAM_SIZE)
        self.uc.reg_write(A.UC_ARM_REG_LR, RETURN | 1)
        self.uc.reg_write(A.UC_ARM_REG_R0, n)
        self.uc.emu_start(addr | 1, RETURN)
        pc = self.uc.reg_read(A.UC_ARM_REG_PC)
        if pc != RETURN or self.executed > LIMIT:
            sys.exit(f"entry at {addr:#x} did not return (pc {pc:#x})")
        if self.counting and self.prev is not None:
            self.taken[self.prev] = self.taken.get(self.prev, 0) + 1  # the return
        return self.uc.reg_read(A.UC_ARM_REG_R0)


def reg_count(op_str):
    """Registers in a {…} list, ranges expanded."""
    inside = op_str[op_str.index("{") + 1:op_str.index("}")]
    n = 0
    for part in inside.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-")
            n += int(hi.strip()[1:]) - int(lo.strip()[1:]) + 1
        else:
            n += 1
    return n


def cycles(insn, executed, taken):
    """(M0 cycles, M4 cycles) of an instruction executed `executed` times, `taken`
    of them followed by a non-sequential instruction."""
    m = insn.mnemonic.split(".")[0]
    ops = insn.op_str
    not_taken = executed - taken
    if m in ("b", "bx", "blx") or (len(m) == 3 and m[0] == "b" and m[1:] in CONDS):
        return 3 * taken + not_taken, 3 * taken + not_taken
    if m == "bl":
        return 4 * executed, 3 * executed
    if m in ("cbz", "cbnz"):
        return 3 * taken + not_taken, 3 * taken + not_taken
    if m in ("tbb", "tbh"):
        return 4 * executed, 4 * executed
    if m in ("push", "pop") or m.startswith("ldm") or m.startswith("stm"):
        n = reg_count(ops)
        if "pc" in ops and (m == "pop" or m.startswith("ldm")):
            return (3 + n) * executed, (3 + n) * executed
        return (1 + n) * executed, (1 + n) * executed
    if m.startswith("ldr"):
        if ops.startswith("pc"):
            return 5 * executed, 4 * executed
        return 2 * executed, (3 if m.startswith("ldrd") else 2) * executed
    if m.startswith("str"):
        return 2 * executed, (3 if m.startswith("strd") else 1) * executed
    if m in ("udiv", "sdiv"):
        return 12 * executed, 12 * executed
    if (m.startswith("mov") or m.startswith("add")) and ops.startswith("pc"):
        return 3 * executed, 3 * executed
    return executed, executed


def by_symbol(machine, cs, symbols):
    """{symbol: (instructions, M0 cycles, M4 cycles)} of what `machine` counted,
    each address charged to the function symbol it lies in."""
    starts = sorted(symbols)
    out = {}
    for addr, n in machine.counts.items():
        code = bytes(machine.uc.mem_read(addr, machine.sizes[addr]))
        insn = next(cs.disasm(code, addr, 1))
        c0, c4 = cycles(insn, n, machine.taken.get(addr, 0))
        lo, hi = 0, len(starts)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if starts[mid] <= addr:
                lo = mid
            else:
                hi = mid
        name = symbols[starts[lo]] if starts and starts[lo] <= addr else "?"
        i, a, b = out.get(name, (0, 0, 0))
        out[name] = (i + n, a + c0, b + c4)
    return out


def tally(machine, cs):
    """(instructions, M0 cycles, M4 cycles) counted by `machine`."""
    insns = m0 = m4 = 0
    for addr, n in machine.counts.items():
        code = bytes(machine.uc.mem_read(addr, machine.sizes[addr]))
        insn = next(cs.disasm(code, addr, 1))
        c0, c4 = cycles(insn, n, machine.taken.get(addr, 0))
        insns += n
        m0 += c0
        m4 += c4
    return insns, m0, m4


class Target:
    def __init__(self, name, elf, cpu, probes=PROBES):
        self.name, self.elf, self.cpu = name, elf, cpu
        self.stack = {}
        self.depth = {}  # probe -> the deepest measured in the runs
        self.cs = Cs(CS_ARCH_ARM, CS_MODE_THUMB | CS_MODE_MCLASS)
        with open(elf, "rb") as f:
            symtab = ELFFile(f).get_section_by_name(".symtab")
            self.symbols = {s.name: s["st_value"] & ~1 for s in symtab.iter_symbols()
                            if s.name.startswith("bench_")}
            self.functions = {s["st_value"] & ~1: s.name for s in symtab.iter_symbols()
                              if s["st_info"]["type"] == "STT_FUNC" and s["st_size"]}
        # The machine code's stack analysis, and the probed paths' entries.
        self.image = stack.Image(elf)
        for probe in probes:
            self.symbols[probe] = self.image.find(probe)

    def run(self, entry, n, marked=False):
        m = Machine(self.elf, self.cpu)
        m.probes = {self.symbols[p]: p for p in PROBES if p in self.symbols}
        ret = m.call(self.symbols[entry], n, marked, HANDLER_ENTRIES.get(entry))
        for p, d in m.probe_depth.items():
            self.depth[p] = max(self.depth.get(p, 0), d)
        self.sent = bytes(m.uart) + bytes(m.dma)
        # Stack high-water mark of the run: bytes below the SP the entry started with.
        self.stack[entry] = max(self.stack.get(entry, 0), RAM + RAM_SIZE - m.min_sp)
        return tally(m, self.cs), ret

    def profile(self, entry, n, marked):
        """Per operation of `entry` (n and 2n as `per_op`; `marked`: n buffers sent,
        per record): {symbol: (instructions, M0 cycles, M4 cycles)}."""
        runs = []
        for k in (n, 2 * n):
            m = Machine(self.elf, self.cpu)
            ret = m.call(self.symbols[entry], k, marked, HANDLER_ENTRIES.get(entry))
            runs.append((by_symbol(m, self.cs, self.functions), ret))
        (a, ra), (b, rb) = runs
        per = (rb - ra) if marked else n
        out = {}
        for name in set(a) | set(b):
            x, y = a.get(name, (0, 0, 0)), b.get(name, (0, 0, 0))
            out[name] = tuple((q - p) / per for p, q in zip(x, y))
        return out

    def per_op(self, entry, n):
        """Per-operation (instructions, M0, M4) from runs of n and 2n, with both r0s."""
        a, ra = self.run(entry, n)
        b, rb = self.run(entry, 2 * n)
        return tuple((y - x) / n for x, y in zip(a, b)), (a, b), (ra, rb)


def measure(t, one_core=None):
    """The figures of one target: name -> (instructions, cycles on its core, what).
    `one_core`: the same bench built with flightrec-core's feature
    `unsafe-assume-single-core`, whose context entry is counted too."""
    core = 1 if t.name == "thumbv6m" else 2  # M0 cycles for v6m, M4 for v7em
    out = {}

    def put(key, vals, what):
        out[key] = (vals[0], vals[core], what)

    def per_record(target, entry, key, what, pair=None):
        """An entry's enter + exit pairs, steady state (no buffer finished, no
        record lost), per record; `pair`: (key, what) of a row per pair first."""
        pairs, _, (r1, r2) = target.per_op(entry, 256)
        assert r1 == r2 == 0, f"the steady-state run of {entry} switched buffers or lost records"
        if pair is not None:
            put(pair[0], pairs, pair[1])
        put(key, tuple(v / 2 for v in pairs), what)
        return pairs

    floor, _, _ = t.per_op("bench_floor", 256)
    put("floor_pair", floor, "floor: 2 × (counter read + 8-byte store)")
    enter, _, (e1, e2) = t.per_op("bench_enter", 256)
    assert e1 == e2 == 0, "the steady-state enter run switched buffers"
    put("enter", enter, "one enter (counter read included), steady state")
    pair = per_record(t, "bench_pair", "record", "per record (enter + exit) / 2, steady state",
                      pair=("pair", "enter + exit, steady state"))
    per_record(t, "bench_pair_wrapped", "record_wrapped",
               "per record, readings past the clock's first wrap (high word 1, read from memory)")
    per_record(t, "bench_pair_extended", "record_extended",
               "per record, a recorder called directly with a shared extended clock "
               "(`TimerClock` over the counter: its time kept past the counter's wraps)")
    per_record(t, "bench_pair_extended_wrapped", "record_extended_wrapped",
               "the same past the counter's first wrap (the extension's high word 1, "
               "where a firmware's clock spends all but its first 2^32 ticks)")
    context = per_record(t, "bench_context_pair", "context_record",
                         "per record through the global recorder and per-context recorders "
                         "(IPSR, shared timer clock, claim), steady state")
    per_record(t, "bench_context_pair_handler", "context_record_handler",
               "the same from an exception handler (SysTick, priority 0x80; the "
               "recorder in the second slot, after thread mode's)")
    # The embassy backend's hooks (flightrec-embassy), each beside `context_record`:
    # runs of 64 and 128 operations (its ring is 2 x 8 KiB), per hook.
    def per_hook(entry, key, hooks, what):
        ops, _, (r1, r2) = t.per_op(entry, 64)
        assert r1 == r2 == 0, f"the steady-state run of {entry} switched buffers or lost records"
        put(key, tuple(v / hooks for v in ops), what)

    per_hook("bench_embassy_poll", "embassy_poll_hook", 2,
             "embassy: `task_exec_begin` or `task_exec_end` (a function record), per hook")
    per_hook("bench_embassy_pass", "embassy_pass_hook", 2,
             "embassy: `poll_start` or `executor_idle` (a function record), per hook")
    per_hook("bench_embassy_ready", "embassy_ready_hook", 1,
             "embassy: `task_ready_begin` (a typed event, both ids)")
    per_hook("bench_embassy_spawn_end", "embassy_spawn_end_hook", 2,
             "embassy: `task_new` or `task_end` (a typed event, both ids), per hook")
    if one_core is not None:
        per_record(one_core, "bench_context_pair", "context_record_one_core",
                   "the same with feature `unsafe-assume-single-core` (claim by a load and a "
                   "store, no `dmb`)")
    def switch_rows(entry, steady, key, what, per_record_what):
        """One buffer switch of `entry` (pairs into 1 KiB buffers, returning the
        buffers finished), beside `steady`, the same pairs' steady-state cost."""
        n = 1024
        sw, (a, b), (s1, s2) = t.per_op(entry, n)
        switches = s2 - s1
        assert s1 > 0 and switches > 0, f"{entry} lost records or did not switch"
        put(key, tuple((y - x - n * p) / switches for x, y, p in zip(a, b, steady)),
            f"{what} (1 KiB buffers, {switches} switches counted)")
        put(f"{key}_per_record", tuple((s - p) / 2 for s, p in zip(sw, steady)),
            per_record_what)

    switch_rows("bench_switch", pair, "switch", "one buffer switch",
                "buffer switch amortised per record over 1 KiB buffers")
    switch_rows("bench_context_switch", context, "context_switch",
                "one buffer switch through the global recorder",
                "the same amortised per record over 1 KiB buffers")
    per_buffer = t.run("bench_fill_1k", 0)[1]
    buffers = 32
    flush, records = t.run("bench_flush_one", buffers, marked=True)
    wire = t.sent
    put("flush_one_per_record", tuple(v / records for v in flush),
        f"link: LinkWriter::flush_one per function record ({buffers} buffers, "
        f"{records} records, header + counters every 16 buffers), onto the transmit "
        "register (a store per byte)")
    flush, dma_records = t.run("bench_flush_one_dma", buffers, marked=True)
    assert dma_records == records and t.sent == wire, "the two sinks got different bytes"
    put("flush_one_dma_per_record", tuple(v / records for v in flush),
        "link: the same onto a DMA channel (two stores per block): framing and check")
    flush, wide_records = t.run("bench_flush_one_dma_wide", buffers, marked=True)
    put("flush_one_dma_wide_per_record", tuple(v / wide_records for v in flush),
        f"link: the same with function id 300 and deltas of 192 ticks (two varint bytes "
        f"each; {wide_records} records)")
    flush, example_records = t.run("bench_flush_one_dma_example", buffers, marked=True)
    put("flush_one_dma_example_per_record", tuple(v / example_records for v in flush),
        f"link: the same with the QEMU example's records (function ids 1, 53, 97, 147 "
        f"and 243, gaps of 25 to 37 ticks: mostly a two-byte and a one-byte varint; "
        f"{example_records} records, {len(t.sent) / example_records:.2f} wire bytes each)")
    return out, per_buffer, len(wire) / records


def measure_user(t, out):
    """The user's-path rows (the bench built with feature `user-path`: src/user.rs)
    into `out`: `#[flightrec::instrument]`, the guide's clocks (M0: a 16-bit timer
    read by a capture, extended by `TimerClock`; M4: `DwtClock`) and rings (4 × 512 B)."""
    core = 1 if t.name == "thumbv6m" else 2
    clock = ("a 16-bit timer read by a capture (store, load), extended to 64 bits"
             if core == 1 else "the DWT cycle counter (`DwtClock`), extended to 64 bits")

    def put(key, vals, what):
        out[key] = (vals[0], vals[core], what)

    def calls(entry, n, steady):
        ops, _, (r1, r2) = t.per_op(entry, n)
        if steady:
            assert r1 == r2 == 0, f"the steady-state run of {entry} switched buffers or lost records"
        else:
            assert 0 < r1 < r2 and r2 != 0xFFFF_FFFF, f"{entry} lost records or did not switch"
        return ops, r2 - r1

    n = 256
    plain, _ = calls("bench_user_plain", n, True)
    attr, _ = calls("bench_user_attribute", n, True)
    attribute = tuple((a - p) / 2 for a, p in zip(attr, plain))
    put("user_attribute_record", attribute,
        "user's path: per record through `#[flightrec::instrument]` (a marked function "
        "called from a loop minus the same function unmarked, / 2: call site, entry "
        f"points, global recorder, context, clock, record), {clock}, steady state")
    pairs, _ = calls("bench_user_direct", n, True)
    direct = tuple(v / 2 for v in pairs)
    put("user_direct_record", direct,
        f"user's path: per record, a recorder called directly, {clock}, steady state")
    n = 1024
    plain, _ = calls("bench_user_plain_512", n, True)
    attr, switches = calls("bench_user_attribute_512", n, False)
    put("user_attribute_switch_per_record",
        tuple((a - p) / 2 - s for a, p, s in zip(attr, plain, attribute)),
        f"user's path: buffer switch amortised per record through the attribute, the "
        f"guide's 4 × 512 B ring ({switches} switches counted)")
    plain, _ = calls("bench_user_plain_1k", n, True)
    attr, switches = calls("bench_user_attribute_1k", n, False)
    put("user_attribute_switch_1k_per_record",
        tuple((a - p) / 2 - s for a, p, s in zip(attr, plain, attribute)),
        f"user's path: the same with 4 × 1 KiB buffers ({switches} switches counted)")
    pairs, switches = calls("bench_user_direct_512", n, False)
    put("user_direct_switch_per_record", tuple(v / 2 - s for v, s in zip(pairs, direct)),
        f"user's path: the same for a recorder called directly ({switches} switches counted)")
    per_buffer = t.run("bench_user_fill_512", 0)[1]
    buffers = 32
    flush, records = t.run("bench_user_flush_one", buffers, marked=True)
    wire = t.sent
    put("user_flush_one_per_record", tuple(v / records for v in flush),
        f"user's path: link onto a UART data register (a store per byte), the guide's "
        f"streaming 4 × 512 B ring ({per_buffer} records a buffer), per function record "
        f"({records} records, {len(wire) / records:.2f} wire bytes each)")
    flush, dma_records = t.run("bench_user_flush_one_dma", buffers, marked=True)
    assert dma_records == records and t.sent == wire, "the two sinks got different bytes"
    put("user_flush_one_dma_per_record", tuple(v / records for v in flush),
        "user's path: the same onto a DMA channel (two stores per block)")


def read_baseline():
    base = {}
    if os.path.exists(BASELINE):
        for line in open(BASELINE):
            line = line.strip()
            if line and not line.startswith("#"):
                k, v = line.split()
                base[k] = float(v)
    return base


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("v6m_elf")
    p.add_argument("v7em_elf")
    p.add_argument("--update", action="store_true", help="rewrite baseline.txt")
    p.add_argument("--tolerance", type=float, default=3.0, help="percent (default 3)")
    p.add_argument("--one-core-v7em", metavar="ELF",
                   help="the thumbv7em bench built with feature unsafe-assume-single-core")
    p.add_argument("--user-v6m", metavar="ELF",
                   help="the thumbv6m bench built with feature user-path")
    p.add_argument("--user-v7em", metavar="ELF",
                   help="the thumbv7em bench built with feature user-path")
    p.add_argument("--profile", metavar="ENTRY",
                   help="print where ENTRY's counted cycles go, by function, and exit")
    args = p.parse_args()
    if args.profile:
        marked = args.profile.startswith(("bench_flush_one", "bench_user_flush_one"))
        # The user's-path build (feature user-path) has its link inlined.
        probes = (RECORD_ENTRY,) if args.profile.startswith("bench_user") else PROBES
        unit = "function record sent" if marked else "operation"
        for name, elf, cpu in (("thumbv6m", args.v6m_elf, A.UC_CPU_ARM_CORTEX_M0),
                               ("thumbv7em", args.v7em_elf, A.UC_CPU_ARM_CORTEX_M4)):
            prof = Target(name, elf, cpu, probes).profile(args.profile, 16 if marked else 256, marked)
            core = "M0" if name == "thumbv6m" else "M4"
            col = 1 if core == "M0" else 2
            print(f"\n{name}: {args.profile}, per {unit}\n")
            print(f"| function | instructions | {core} cycles |\n|---|---:|---:|")
            rows = [(s, v) for s, v in sorted(prof.items(), key=lambda kv: -kv[1][col])
                    if abs(v[col]) >= 0.005]
            for (_, v), sym in zip(rows, stack.demangle([s for s, _ in rows])):
                print(f"| `{sym}` | {v[0]:.2f} | {v[col]:.2f} |")
            total = [sum(v[i] for v in prof.values()) for i in range(3)]
            print(f"| total | {total[0]:.2f} | {total[col]:.2f} |")
        return 0

    base = read_baseline()
    measured = {}
    ok = True
    for name, elf, cpu, core in (("thumbv6m", args.v6m_elf, A.UC_CPU_ARM_CORTEX_M0, "M0"),
                                 ("thumbv7em", args.v7em_elf, A.UC_CPU_ARM_CORTEX_M4, "M4")):
        target = Target(name, elf, cpu)
        one_core = None
        if name == "thumbv7em" and args.one_core_v7em:
            one_core = Target(name, args.one_core_v7em, cpu)
        figures, per_buffer, wire = measure(target, one_core)
        user_elf = args.user_v6m if name == "thumbv6m" else args.user_v7em
        if user_elf:
            # (Its link is inlined into its two entries: the record path is probed.)
            measure_user(Target(name, user_elf, cpu, probes=(RECORD_ENTRY,)), figures)
        floor_pair = figures["floor_pair"]
        print(f"\n{name}-none-eabi{'hf' if name == 'thumbv7em' else ''} on a Cortex-{core} "
              f"(1 KiB buffer = {per_buffer} function records)\n")
        print(f"| path | instructions | {core} cycles | baseline insns | change |")
        print("|---|---:|---:|---:|---:|")
        for key, (insns, cyc, what) in figures.items():
            for suffix, val in (("insns", insns), ("cycles", cyc)):
                measured[f"{name}.{key}.{suffix}"] = val
            b = base.get(f"{name}.{key}.insns")
            bc = base.get(f"{name}.{key}.cycles")
            status = ""
            if b is None or bc is None:
                status = "no baseline"
                ok = ok and args.update
            else:
                pct = 100.0 * (insns - b) / b if b else 0.0
                pctc = 100.0 * (cyc - bc) / bc if bc else 0.0
                worst = max(pct, pctc)
                status = f"{pct:+.1f} %"
                if worst > args.tolerance:
                    status += " REGRESSED"
                    ok = ok and args.update
                elif min(pct, pctc) < -args.tolerance:
                    status += " (update the baseline)"
            bs = "—" if b is None else f"{b:.2f}"
            print(f"| `{key}`: {what} | {insns:.2f} | {cyc:.2f} | {bs} | {status} |")
        t_stack = ", ".join(f"`{e}` {b} B" for e, b in target.stack.items())
        print(f"\nstack high-water mark of each entry's run (setup included; the "
              f"floor is the baseline): {t_stack}")
        # The stack of the record path and of the link: bounds from the machine
        # code (stack.py), which must hold what the runs above measured.
        # The bounds are checked against the baseline too, as the counts are.
        for probe, key, what, runs in (
                (RECORD_ENTRY, "stack_record", f"the record path (`{RECORD_ENTRY}`)",
                 "a buffer switch's way; no loss marker"),
                (PROBES[1], "stack_flush_one", "the link (`LinkWriter::flush_one`)",
                 "frames of every kind")):
            bound, chain = target.image.worst_case(target.symbols[probe])
            deepest = stack.short(stack.demangle([chain[-1][0]]))[0]
            measured[f"{name}.{key}.bytes"] = bound
            b = base.get(f"{name}.{key}.bytes")
            status = "no baseline" if b is None else f"baseline {b:.0f} B"
            if b is None:
                ok = ok and args.update
            elif bound > b * (1 + args.tolerance / 100):
                status += " REGRESSED"
                ok = ok and args.update
            print(f"\nstack of {what}: {bound} B at most from the machine code "
                  f"({deepest} deepest; {status}); the runs above "
                  f"went {target.depth.get(probe, 0)} B deep ({runs})")
            if target.depth.get(probe, 0) > bound:
                print("the measured depth exceeds the bound: stack.py misreads this code")
                ok = False
        print(f"\nfloor for an enter + exit: {floor_pair[0]:.2f} instructions, "
              f"{floor_pair[1]:.2f} {core} cycles; link: {wire:.2f} wire bytes per "
              "function record (frames, COBS and CRC included)")
    if args.update:
        with open(BASELINE, "w") as f:
            f.write("# Cortex-M instructions and cycles (M0 for thumbv6m, M4 for thumbv7em)\n"
                    "# per operation of each path, counted in Unicorn by run.py, and the\n"
                    "# stack bounds of the record path and the link (stack.py).\n"
                    "# Written by `bash .ci/steps/cortex-m-cost.sh --update`.\n")
            for k in sorted(measured):
                f.write(f"{k} {measured[k]:.2f}\n")
        print("\nbaseline written: benches/cortex-m/baseline.txt")
    elif not ok:
        print(f"\na count rose more than {args.tolerance} % above its baseline (or has none)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
