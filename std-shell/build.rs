//! Ships `flightrec.x`, the linker fragment that gathers the name statics of
//! `#[flightrec::instrument]` into the non-loaded `.flightrec` section of a
//! firmware ELF (ids from address 1 on), and the interned strings of compact
//! Trace2 events (`flightrec_core::trace2_str!`) into `.flightrec.trace2`, the
//! way defmt ships `defmt.x`. The firmware links it with
//! `-C link-arg=-Tflightrec.x`.
use std::path::PathBuf;

const FLIGHTREC_X: &str = "\
/* flightrec.x: function names of #[flightrec::instrument] (flightrec crate).
 * Not loaded: the firmware carries no names; the host reads them from the ELF.
 * A function's id is the address of its entry, so ids start at 1: GNU ld puts
 * the section at 1, and LLD (which places non-loaded sections at 0) skips the
 * leading NUL byte as well. */
SECTIONS
{
  .flightrec 1 (INFO) :
  {
    BYTE(0);
    KEEP(*(.flightrec.fn.*));
  }
  /* Constant strings of compact Trace2 events (flightrec_core::trace2_str!),
   * each ending with a NUL; a string's id is its address (from 1 on). */
  .flightrec.trace2 1 (INFO) :
  {
    BYTE(0);
    KEEP(*(.flightrec.trace2.*));
  }
}
ASSERT(SIZEOF(.flightrec) < 0x0FFFFFFF, \"flightrec.x: more function names than 28-bit ids hold\");
";

/// On Thumb-2 targets an instrumented function loads its id with one `movw` (its
/// low 16 bits), so the names must end below 64 KiB.
const MOVW_ASSERT: &str = "\
ASSERT(SIZEOF(.flightrec) < 0xFFFF, \"flightrec.x: over 64 KiB of function names: \
the ids of #[flightrec::instrument] on Thumb-2 have 16 bits\");
";

/// With feature `small-ids` (Thumb targets): each site's id is the address of
/// a byte of its own in `.flightrec.id`, made by one `movs` of 8 bits, and
/// `.flightrec.map` pairs each id with its name for the host.
const SMALL_IDS: &str = "\
SECTIONS
{
  .flightrec.id 0 (INFO) :
  {
    BYTE(0);
    KEEP(*(.flightrec.id .flightrec.id.*));
  }
  .flightrec.map 0 (INFO) :
  {
    KEEP(*(.flightrec.map .flightrec.map.*));
  }
}
ASSERT(ADDR(.flightrec.id) + SIZEOF(.flightrec.id) <= 256, \"flightrec.x: more than 255 \
instrumented functions and scopes: the ids of feature small-ids have 8 bits; turn the \
feature off\");
";

/// Targets with `movw` (Thumb-2: ARMv7-M, ARMv7E-M, ARMv8-M), where a site's id
/// is one `movw` of its low 16 bits.
fn has_movw(target: &str) -> bool {
    target.starts_with("thumbv7") || target.starts_with("thumbv8m")
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-check-cfg=cfg(flightrec_movw)");
    println!("cargo:rustc-check-cfg=cfg(flightrec_small_ids)");
    // Only firmware builds (no `std`) link it.
    if std::env::var_os("CARGO_FEATURE_STD").is_some() {
        return;
    }
    let target = std::env::var("TARGET").unwrap_or_default();
    let mut script = String::from(FLIGHTREC_X);
    if has_movw(&target) {
        println!("cargo:rustc-cfg=flightrec_movw");
        script.push_str(MOVW_ASSERT);
    }
    if std::env::var_os("CARGO_FEATURE_SMALL_IDS").is_some() && target.starts_with("thumb") {
        println!("cargo:rustc-cfg=flightrec_small_ids");
        script.push_str(SMALL_IDS);
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("flightrec.x"), script).expect("write flightrec.x");
    println!("cargo:rustc-link-search={}", out.display());
}
