//! Ships `flightrec.x`, the linker fragment that gathers the name statics of
//! `#[flightrec::instrument]` into the non-loaded `.flightrec` section of a
//! firmware ELF (ids from address 1 on), the way defmt ships `defmt.x`. The
//! firmware links it with `-C link-arg=-Tflightrec.x`.
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
}
ASSERT(SIZEOF(.flightrec) < 0x0FFFFFFF, \"flightrec.x: more function names than 28-bit ids hold\");
";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // Only firmware builds (no `std`) link it.
    if std::env::var_os("CARGO_FEATURE_STD").is_some() {
        return;
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("flightrec.x"), FLIGHTREC_X).expect("write flightrec.x");
    println!("cargo:rustc-link-search={}", out.display());
}
