//! The instrumentation map: every sled of the executable, with the function ids
//! `llvm-xray` gives them.
//!
//! The compiler writes one 32-byte entry per sled into the `xray_instr_map`
//! section (compiler-rt's `XRaySledEntry`): the sled's address, its function's
//! address, the kind, an "always instrument" flag and the entry's version. From
//! version 2 on both addresses are relative to the field that holds them
//! (position-independent code needs no relocations); before, they are absolute.
//!
//! Function ids: `llvm-xray`'s `InstrumentationMap` walks the entries in order and
//! starts a new id (from 1) each time an entry's function differs from the one
//! before. Giving ids the same way lets `llvm-xray account -m ./binary` name every
//! function of a trace with no names file.

use std::fmt;

/// Size of one entry of `xray_instr_map` on 64-bit targets. Example on [`SledMap`].
pub const ENTRY_SIZE: usize = 32;

/// The newest entry version this runtime understands.
///
/// ```
/// use flightrec_sleds::map::{MapError, SledMap, ENTRY_SIZE, MAX_VERSION};
/// let mut entry = [0u8; ENTRY_SIZE];
/// entry[18] = MAX_VERSION + 1;
/// let err = SledMap::parse(&entry, 0).unwrap_err();
/// assert_eq!(err, MapError::UnknownVersion { index: 0, version: MAX_VERSION + 1 });
/// ```
pub const MAX_VERSION: u8 = 2;

/// What a sled marks (compiler-rt's `XRayEntryType` numbering).
///
/// ```
/// use flightrec_sleds::map::SledKind;
/// assert_eq!(SledKind::from_byte(2), Some(SledKind::TailExit));
/// assert_eq!(SledKind::from_byte(9), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SledKind {
    /// Function entry.
    Entry,
    /// Function exit (a `ret`).
    Exit,
    /// Exit through a tail call.
    TailExit,
    /// Function entry that logs the first argument.
    LogArgsEntry,
    /// A `__xray_customevent` call site.
    CustomEvent,
    /// A `__xray_typedevent` call site.
    TypedEvent,
}

impl SledKind {
    /// The kind of an entry's kind byte. Example on [`SledKind`].
    pub fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            0 => Self::Entry,
            1 => Self::Exit,
            2 => Self::TailExit,
            3 => Self::LogArgsEntry,
            4 => Self::CustomEvent,
            5 => Self::TypedEvent,
            _ => return None,
        })
    }
}

/// One sled: where it is, what it marks, and its function's id.
///
/// ```
/// use flightrec_sleds::map::{Sled, SledKind, SledMap, ENTRY_SIZE};
/// // One absolute (version 1) entry: an entry sled at 0x1010 in a function at 0x1000.
/// let mut entry = [0u8; ENTRY_SIZE];
/// entry[0..8].copy_from_slice(&0x1010u64.to_le_bytes());
/// entry[8..16].copy_from_slice(&0x1000u64.to_le_bytes());
/// entry[18] = 1;
/// let map = SledMap::parse(&entry, 0x8000)?;
/// let expected = Sled {
///     address: 0x1010,
///     function: 0x1000,
///     kind: SledKind::Entry,
///     function_id: 1,
///     version: 1,
/// };
/// assert_eq!(map.sleds(), &[expected]);
/// # Ok::<(), flightrec_sleds::map::MapError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sled {
    /// Address of the sled's first byte.
    pub address: usize,
    /// Address of the function the sled belongs to.
    pub function: usize,
    /// What the sled marks.
    pub kind: SledKind,
    /// The function's id (1-based, `llvm-xray`'s numbering).
    pub function_id: u32,
    /// The map entry's version (0 to [`MAX_VERSION`]): custom event sleds of
    /// version 0 are longer than later ones.
    pub version: u8,
}

/// Why the map cannot be used. Tracing stays off.
///
/// ```
/// use flightrec_sleds::map::{MapError, SledMap};
/// assert_eq!(SledMap::parse(&[], 0).unwrap_err(), MapError::NoSleds);
/// let err = SledMap::parse(&[0; 40], 0).unwrap_err();
/// assert_eq!(err, MapError::Truncated(40));
/// assert!(err.to_string().contains("40 bytes"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The executable has no `xray_instr_map` section.
    NoSleds,
    /// The section's size is not a whole number of entries.
    Truncated(usize),
    /// An entry of a version this runtime does not know.
    UnknownVersion {
        /// Index of the first such entry.
        index: usize,
        /// Its version byte.
        version: u8,
    },
    /// An entry of a kind this runtime does not know.
    UnknownKind {
        /// Index of the first such entry.
        index: usize,
        /// Its kind byte.
        kind: u8,
    },
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapError::NoSleds => f.write_str(
                "this executable has no XRay sleds (build it with `clang -fxray-instrument` \
                 or `rustc -Zinstrument-xray=always`)",
            ),
            MapError::Truncated(n) => write!(
                f,
                "the xray_instr_map section has {n} bytes, not a multiple of {ENTRY_SIZE}"
            ),
            MapError::UnknownVersion { index, version } => write!(
                f,
                "XRay sled entry {index} has version {version}; this runtime knows versions 0 to {MAX_VERSION}"
            ),
            MapError::UnknownKind { index, kind } => {
                write!(f, "XRay sled entry {index} has unknown kind {kind}")
            }
        }
    }
}

impl std::error::Error for MapError {}

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
        if bytes.is_empty() {
            return Err(MapError::NoSleds);
        }
        if bytes.len() % ENTRY_SIZE != 0 {
            return Err(MapError::Truncated(bytes.len()));
        }
        let mut map = SledMap::default();
        let mut current: Option<usize> = None;
        for (index, entry) in bytes.chunks_exact(ENTRY_SIZE).enumerate() {
            let word = |at: usize| {
                let mut w = [0u8; 8];
                w.copy_from_slice(&entry[at..at + 8]);
                u64::from_le_bytes(w) as usize
            };
            let (raw_address, raw_function) = (word(0), word(8));
            let (kind, version) = (entry[16], entry[18]);
            let entry_at = base.wrapping_add(index * ENTRY_SIZE);
            let (address, function) = match version {
                0 | 1 => (raw_address, raw_function),
                2 => (
                    entry_at.wrapping_add(raw_address),
                    entry_at.wrapping_add(8).wrapping_add(raw_function),
                ),
                _ => return Err(MapError::UnknownVersion { index, version }),
            };
            let kind = SledKind::from_byte(kind).ok_or(MapError::UnknownKind { index, kind })?;
            if current != Some(function) {
                current = Some(function);
                map.functions.push(function);
            }
            map.sleds.push(Sled {
                address,
                function,
                kind,
                function_id: map.functions.len() as u32,
                version,
            });
        }
        Ok(map)
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

    fn entry(address: u64, function: u64, kind: u8, version: u8) -> [u8; ENTRY_SIZE] {
        let mut e = [0u8; ENTRY_SIZE];
        e[0..8].copy_from_slice(&address.to_le_bytes());
        e[8..16].copy_from_slice(&function.to_le_bytes());
        e[16] = kind;
        e[18] = version;
        e
    }

    #[test]
    fn ids_follow_changes_of_function_like_llvm_xray() {
        // Absolute (version 1) entries: functions A, A, B, B, A (A again after B
        // gets a new id, as in llvm-xray's walk).
        let mut bytes = Vec::new();
        for (addr, func, kind) in [
            (0x10, 0xa0, 0),
            (0x20, 0xa0, 1),
            (0x30, 0xb0, 0),
            (0x40, 0xb0, 2),
            (0x50, 0xa0, 1),
        ] {
            bytes.extend_from_slice(&entry(addr, func, kind, 1));
        }
        let map = SledMap::parse(&bytes, 0x9999).unwrap();
        let ids: Vec<u32> = map.sleds().iter().map(|s| s.function_id).collect();
        assert_eq!(ids, [1, 1, 2, 2, 3]);
        assert_eq!(map.max_function_id(), 3);
        assert_eq!(map.function_address(3), Some(0xa0));
        assert_eq!(map.function_address(0), None);
        assert_eq!(map.function_address(4), None);
        assert_eq!(map.sleds()[3].kind, SledKind::TailExit);
    }

    #[test]
    fn version_2_addresses_count_from_their_own_field() {
        let base = 0x7000usize;
        let e1_at = base + ENTRY_SIZE;
        let sled = 0x1234usize;
        let func = 0x1200usize;
        let mut bytes = entry(0, 0, 0, 2).to_vec();
        bytes.extend_from_slice(&entry(
            sled.wrapping_sub(e1_at) as u64,
            func.wrapping_sub(e1_at + 8) as u64,
            1,
            2,
        ));
        let map = SledMap::parse(&bytes, base).unwrap();
        assert_eq!(map.sleds()[1].address, sled);
        assert_eq!(map.sleds()[1].function, func);
        assert_eq!(map.sleds()[0].address, base);
    }

    #[test]
    fn unusable_maps_say_why() {
        assert_eq!(SledMap::parse(&[], 0).unwrap_err(), MapError::NoSleds);
        assert_eq!(
            SledMap::parse(&[0; 40], 0).unwrap_err(),
            MapError::Truncated(40)
        );
        let mut bytes = entry(0, 0, 0, 2).to_vec();
        bytes.extend_from_slice(&entry(0, 0, 0, 3));
        let err = SledMap::parse(&bytes, 0).unwrap_err();
        assert_eq!(
            err,
            MapError::UnknownVersion {
                index: 1,
                version: 3
            }
        );
        assert!(err.to_string().contains("version 3"), "{err}");
        let err = SledMap::parse(&entry(0, 0, 6, 2), 0).unwrap_err();
        assert_eq!(err, MapError::UnknownKind { index: 0, kind: 6 });
    }
}
