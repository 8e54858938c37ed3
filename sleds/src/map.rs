//! The instrumentation map of this executable: every sled, read once by the
//! core's reader of `xray_instr_map` ([`flightrec::core::sled_map`], which
//! also says how entries and function ids work), with each function's
//! address by id.
//!
//! ```
//! use flightrec_sleds::map::{MapError, SledKind, SledMap, ENTRY_SIZE, MAX_VERSION};
//! assert_eq!(SledKind::from_byte(2), Some(SledKind::TailExit));
//! let mut entry = [0u8; ENTRY_SIZE];
//! entry[18] = MAX_VERSION + 1;
//! let err = SledMap::parse(&entry, 0).unwrap_err();
//! assert_eq!(err, MapError::UnknownVersion { index: 0, version: MAX_VERSION + 1 });
//! assert!(err.to_string().contains("versions 0 to 2"));
//! ```

use flightrec::core::sled_map;
pub use flightrec::core::sled_map::{MapError, Sled, SledKind, ENTRY_SIZE, MAX_VERSION};

/// Every sled of an executable, in map order, and each function's address by id.
///
/// ```
/// use flightrec_sleds::map::{SledKind, SledMap, ENTRY_SIZE};
/// // Two version-2 entries at address 0x1000: the entry and exit sleds of a
/// // function at 0x400, the sleds at 0x400 and 0x420.
/// let mut bytes = vec![0u8; 2 * ENTRY_SIZE];
/// for (i, (sled, kind)) in [(0x400u64, 0u8), (0x420, 1)].into_iter().enumerate() {
///     let at = 0x1000 + (i * ENTRY_SIZE) as u64;
///     let e = &mut bytes[i * ENTRY_SIZE..][..ENTRY_SIZE];
///     e[0..8].copy_from_slice(&sled.wrapping_sub(at).to_le_bytes());
///     e[8..16].copy_from_slice(&0x400u64.wrapping_sub(at + 8).to_le_bytes());
///     e[16] = kind;
///     e[18] = 2; // version
/// }
/// let map = SledMap::parse(&bytes, 0x1000)?;
/// assert_eq!(map.max_function_id(), 1);
/// assert_eq!(map.function_address(1), Some(0x400));
/// assert_eq!(map.sleds()[1].kind, SledKind::Exit);
/// assert_eq!(map.sleds()[1].address, 0x420);
/// # Ok::<(), flightrec_sleds::map::MapError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct SledMap {
    sleds: Vec<Sled>,
    /// `functions[id - 1]`: the address of function `id`.
    functions: Vec<usize>,
}

impl SledMap {
    /// Reads the entries in `bytes`, which the process maps at address `base`
    /// (relative addresses count from there). Example on [`SledMap`].
    pub fn parse(bytes: &[u8], base: usize) -> Result<Self, MapError> {
        let map = sled_map::SledMap::parse(bytes, base)?;
        let sleds: Vec<Sled> = map.iter().collect();
        let mut functions = Vec::with_capacity(map.max_function_id() as usize);
        for s in &sleds {
            // Ids start at 1 and grow by one at each change of function.
            if s.function_id as usize > functions.len() {
                functions.push(s.function);
            }
        }
        Ok(SledMap { sleds, functions })
    }

    /// Every sled, in map order. Example on [`SledMap`].
    pub fn sleds(&self) -> &[Sled] {
        &self.sleds
    }

    /// The largest function id (ids run from 1 to this). Example on [`SledMap`].
    pub fn max_function_id(&self) -> u32 {
        self.functions.len() as u32
    }

    /// The address of function `id`, if there is one. Example on [`SledMap`].
    pub fn function_address(&self, id: u32) -> Option<usize> {
        let i = usize::try_from(id).ok()?.checked_sub(1)?;
        self.functions.get(i).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_addresses_by_llvm_xray_ids() {
        // Functions A, A, B, B, A: A again after B gets a new id.
        let mut bytes = Vec::new();
        for (addr, func, kind) in [
            (0x10, 0xa0, 0),
            (0x20, 0xa0, 1),
            (0x30, 0xb0, 0),
            (0x40, 0xb0, 2),
            (0x50, 0xa0, 1),
        ] {
            let kind = SledKind::from_byte(kind).unwrap();
            let sled = Sled {
                address: addr,
                function: func,
                kind,
                function_id: 0,
                version: 1,
            };
            bytes.extend_from_slice(&sled.to_entry(0));
        }
        let map = SledMap::parse(&bytes, 0x9999).unwrap();
        let ids: Vec<u32> = map.sleds().iter().map(|s| s.function_id).collect();
        assert_eq!(ids, [1, 1, 2, 2, 3]);
        assert_eq!(map.max_function_id(), 3);
        assert_eq!(map.function_address(1), Some(0xa0));
        assert_eq!(map.function_address(2), Some(0xb0));
        assert_eq!(map.function_address(3), Some(0xa0));
        assert_eq!(map.function_address(0), None);
        assert_eq!(map.function_address(4), None);
    }

    #[test]
    fn unusable_maps_say_why() {
        let err = SledMap::parse(&[], 0).unwrap_err();
        assert_eq!(err, MapError::NoSleds);
        assert!(err.to_string().contains("-fxray-instrument"), "{err}");
        let err = SledMap::parse(&[0; 40], 0).unwrap_err();
        assert!(err.to_string().contains("40 bytes"), "{err}");
    }
}
