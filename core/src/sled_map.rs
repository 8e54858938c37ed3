//! The XRay instrumentation map (`xray_instr_map`), read in place without
//! allocating: the one reader of it, for the desktop sled runtime
//! (`flightrec-sleds`) and the bare-metal one (`flightrec-sleds-aarch64`).
//!
//! The compiler writes one 32-byte entry per sled (compiler-rt's
//! `XRaySledEntry`): the sled's address, its function's address, the kind, an
//! "always instrument" flag and the entry's version. From version 2 on both
//! addresses are relative to the field that holds them (position-independent
//! code needs no relocations); before, they are absolute.
//!
//! Function ids follow `llvm-xray`'s `InstrumentationMap`: walking the entries
//! in order, a new id (from 1) starts whenever the function differs from the
//! one before. Giving ids the same way lets `llvm-xray account -m ./binary`
//! name every function of a trace with no names file.

use core::fmt;

/// Size of one entry of `xray_instr_map` on 64-bit targets. Example on [`SledMap`].
pub const ENTRY_SIZE: usize = 32;

/// The newest entry version understood. Example on [`MapError`].
pub const MAX_VERSION: u8 = 2;

/// What a sled marks (compiler-rt's `XRayEntryType` numbering).
///
/// ```
/// use flightrec_core::sled_map::SledKind;
/// assert_eq!(SledKind::from_byte(1), Some(SledKind::Exit));
/// assert_eq!(SledKind::from_byte(9), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SledKind {
    /// Function entry.
    Entry,
    /// Function exit (before a `ret`).
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

    /// The entry's kind byte: the inverse of [`from_byte`](Self::from_byte).
    ///
    /// ```
    /// use flightrec_core::sled_map::SledKind;
    /// assert_eq!(SledKind::TailExit.to_byte(), 2);
    /// assert_eq!(SledKind::from_byte(SledKind::TypedEvent.to_byte()), Some(SledKind::TypedEvent));
    /// ```
    pub fn to_byte(self) -> u8 {
        match self {
            Self::Entry => 0,
            Self::Exit => 1,
            Self::TailExit => 2,
            Self::LogArgsEntry => 3,
            Self::CustomEvent => 4,
            Self::TypedEvent => 5,
        }
    }
}

/// One sled: where it is, what it marks, and its function's id.
///
/// ```
/// use flightrec_core::sled_map::{Sled, SledKind, SledMap, ENTRY_SIZE};
/// let mut entry = [0u8; ENTRY_SIZE];
/// entry[0..8].copy_from_slice(&0x1020u64.to_le_bytes());
/// entry[8..16].copy_from_slice(&0x1000u64.to_le_bytes());
/// entry[16] = 1; // exit
/// entry[18] = 1; // version 1: absolute addresses
/// let map = SledMap::parse(&entry, 0)?;
/// let want = Sled { address: 0x1020, function: 0x1000, kind: SledKind::Exit, function_id: 1, version: 1 };
/// assert_eq!(map.iter().next(), Some(want));
/// # Ok::<(), flightrec_core::sled_map::MapError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sled {
    /// Address of the sled's first instruction.
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

impl Sled {
    /// The map entry for this sled as the compiler writes it, the entry being
    /// at address `at` (version 2 and later store addresses relative to their
    /// field; earlier versions, absolute). The function id is not stored: the
    /// reader gives it. The inverse of reading one entry with [`SledMap`].
    ///
    /// ```
    /// use flightrec_core::sled_map::{Sled, SledKind, SledMap};
    /// let sled = Sled { address: 0x420, function: 0x400, kind: SledKind::Exit, function_id: 1, version: 2 };
    /// let entry = sled.to_entry(0x9000);
    /// assert_eq!(SledMap::parse(&entry, 0x9000)?.iter().next(), Some(sled));
    /// # Ok::<(), flightrec_core::sled_map::MapError>(())
    /// ```
    pub fn to_entry(&self, at: usize) -> [u8; ENTRY_SIZE] {
        let (address, function) = if self.version >= 2 {
            (
                self.address.wrapping_sub(at),
                self.function.wrapping_sub(at.wrapping_add(8)),
            )
        } else {
            (self.address, self.function)
        };
        let mut e = [0u8; ENTRY_SIZE];
        e[0..8].copy_from_slice(&(address as u64).to_le_bytes());
        e[8..16].copy_from_slice(&(function as u64).to_le_bytes());
        e[16] = self.kind.to_byte();
        e[18] = self.version;
        e
    }
}

/// Why the map cannot be used.
///
/// ```
/// use flightrec_core::sled_map::{MapError, SledMap, ENTRY_SIZE, MAX_VERSION};
/// assert_eq!(SledMap::parse(&[], 0).unwrap_err(), MapError::NoSleds);
/// assert_eq!(SledMap::parse(&[0; 40], 0).unwrap_err(), MapError::Truncated(40));
/// let mut entry = [0u8; ENTRY_SIZE];
/// entry[18] = MAX_VERSION + 1;
/// let err = SledMap::parse(&entry, 0).unwrap_err();
/// assert_eq!(err, MapError::UnknownVersion { index: 0, version: MAX_VERSION + 1 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The section is empty or missing.
    NoSleds,
    /// The section's size is not a whole number of entries.
    Truncated(usize),
    /// An entry of a version not understood.
    UnknownVersion {
        /// Index of the first such entry.
        index: usize,
        /// Its version byte.
        version: u8,
    },
    /// An entry of an unknown kind.
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
                "this executable has no XRay sleds (its xray_instr_map section is empty or \
                 missing: build it with `clang -fxray-instrument` or \
                 `rustc -Zinstrument-xray=always`)",
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

impl core::error::Error for MapError {}

/// A checked instrumentation map: its bytes and the address they are mapped at.
///
/// ```
/// use flightrec_core::sled_map::{SledKind, SledMap, ENTRY_SIZE};
/// // Version-2 entries at 0x9000: entry and exit sleds of a function at 0x400.
/// let mut bytes = [0u8; 2 * ENTRY_SIZE];
/// for (i, (sled, kind)) in [(0x400u64, 0u8), (0x420, 1)].into_iter().enumerate() {
///     let at = 0x9000 + (i * ENTRY_SIZE) as u64;
///     let e = &mut bytes[i * ENTRY_SIZE..][..ENTRY_SIZE];
///     e[0..8].copy_from_slice(&sled.wrapping_sub(at).to_le_bytes());
///     e[8..16].copy_from_slice(&0x400u64.wrapping_sub(at + 8).to_le_bytes());
///     e[16] = kind;
///     e[18] = 2;
/// }
/// let map = SledMap::parse(&bytes, 0x9000)?;
/// assert_eq!(map.len(), 2);
/// assert!(!map.is_empty());
/// assert_eq!(map.max_function_id(), 1);
/// let exit = map.iter().nth(1).unwrap();
/// assert_eq!((exit.address, exit.kind, exit.function_id), (0x420, SledKind::Exit, 1));
/// # Ok::<(), flightrec_core::sled_map::MapError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SledMap<'a> {
    bytes: &'a [u8],
    base: usize,
    functions: u32,
}

impl<'a> SledMap<'a> {
    /// Checks every entry of `bytes`, mapped at address `base` (relative
    /// addresses count from there). Example on [`SledMap`].
    pub fn parse(bytes: &'a [u8], base: usize) -> Result<Self, MapError> {
        if bytes.is_empty() {
            return Err(MapError::NoSleds);
        }
        if bytes.len() % ENTRY_SIZE != 0 {
            return Err(MapError::Truncated(bytes.len()));
        }
        for (index, e) in bytes.chunks_exact(ENTRY_SIZE).enumerate() {
            let (kind, version) = (e[16], e[18]);
            if version > MAX_VERSION {
                return Err(MapError::UnknownVersion { index, version });
            }
            if SledKind::from_byte(kind).is_none() {
                return Err(MapError::UnknownKind { index, kind });
            }
        }
        let mut map = SledMap {
            bytes,
            base,
            functions: 0,
        };
        map.functions = map.iter().last().map_or(0, |s| s.function_id);
        Ok(map)
    }

    /// The map in the section from `start` to `stop` where the program runs,
    /// such as between the linker's `__start_xray_instr_map` and
    /// `__stop_xray_instr_map` (relative addresses count from `start`).
    ///
    /// # Safety
    /// `start..stop` is readable memory that nothing writes for the rest of
    /// the program (an ELF section the linker bounds with these symbols is).
    ///
    /// ```
    /// use flightrec_core::sled_map::{Sled, SledKind, SledMap, ENTRY_SIZE};
    /// let sled = Sled {
    ///     address: 0x4008_0000,
    ///     function: 0x4008_0000,
    ///     kind: SledKind::Entry,
    ///     function_id: 1,
    ///     version: 1,
    /// };
    /// // A section that lives as long as the program.
    /// let section: &'static [u8; ENTRY_SIZE] = Box::leak(Box::new(sled.to_entry(0)));
    /// let range = section.as_ptr_range();
    /// // SAFETY: leaked memory nothing writes.
    /// let map = unsafe { SledMap::from_section(range.start, range.end) }?;
    /// assert_eq!(map.iter().next().map(|s| s.address), Some(0x4008_0000));
    /// # Ok::<(), flightrec_core::sled_map::MapError>(())
    /// ```
    pub unsafe fn from_section(
        start: *const u8,
        stop: *const u8,
    ) -> Result<SledMap<'static>, MapError> {
        let len = (stop as usize).saturating_sub(start as usize);
        // SAFETY: the caller's promise: `start..stop` stays readable and
        // unwritten for the program's life.
        let bytes = unsafe { core::slice::from_raw_parts(start, len) };
        SledMap::parse(bytes, start as usize)
    }

    /// Number of sleds. Example on [`SledMap`].
    pub fn len(&self) -> usize {
        self.bytes.len() / ENTRY_SIZE
    }

    /// Whether there are no sleds (never, for a parsed map). Example on [`SledMap`].
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The largest function id (ids run from 1 to this). Example on [`SledMap`].
    pub fn max_function_id(&self) -> u32 {
        self.functions
    }

    /// Every sled, in map order, with its function id. Example on [`SledMap`].
    pub fn iter(&self) -> Sleds<'a> {
        Sleds {
            entries: self.bytes.chunks_exact(ENTRY_SIZE),
            at: self.base,
            current: None,
            id: 0,
        }
    }
}

/// The sleds of a [`SledMap`], in map order (from [`SledMap::iter`]).
///
/// ```
/// use flightrec_core::sled_map::{SledMap, ENTRY_SIZE};
/// // Version 1, functions A, B, A: A again after B gets a new id.
/// let mut bytes = [0u8; 3 * ENTRY_SIZE];
/// for (i, f) in [0xa0u64, 0xb0, 0xa0].into_iter().enumerate() {
///     bytes[i * ENTRY_SIZE + 8..][..8].copy_from_slice(&f.to_le_bytes());
///     bytes[i * ENTRY_SIZE + 18] = 1;
/// }
/// let ids: Vec<u32> = SledMap::parse(&bytes, 0)?.iter().map(|s| s.function_id).collect();
/// assert_eq!(ids, [1, 2, 3]);
/// # Ok::<(), flightrec_core::sled_map::MapError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Sleds<'a> {
    entries: core::slice::ChunksExact<'a, u8>,
    at: usize,
    current: Option<usize>,
    id: u32,
}

impl Iterator for Sleds<'_> {
    type Item = Sled;

    fn next(&mut self) -> Option<Sled> {
        let e = self.entries.next()?;
        let entry_at = self.at;
        self.at = self.at.wrapping_add(ENTRY_SIZE);
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&e[at..at + 8]);
            u64::from_le_bytes(w) as usize
        };
        let (raw_address, raw_function) = (word(0), word(8));
        let version = e[18];
        let (address, function) = if version >= 2 {
            (
                entry_at.wrapping_add(raw_address),
                entry_at.wrapping_add(8).wrapping_add(raw_function),
            )
        } else {
            (raw_address, raw_function)
        };
        if self.current != Some(function) {
            self.current = Some(function);
            self.id += 1;
        }
        Some(Sled {
            address,
            function,
            // `parse` checked every kind byte.
            kind: SledKind::from_byte(e[16]).unwrap_or(SledKind::CustomEvent),
            function_id: self.id,
            version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry with these raw fields: absolute addresses written as they are,
    /// then the kind and version bytes set as given (known or not).
    fn entry(address: usize, function: usize, kind: u8, version: u8) -> [u8; ENTRY_SIZE] {
        let (kind_byte, version_byte) = (kind, version);
        let (kind, function_id, version) = (SledKind::Entry, 0, 1);
        let mut e = Sled {
            address,
            function,
            kind,
            function_id,
            version,
        }
        .to_entry(0);
        e[16] = kind_byte;
        e[18] = version_byte;
        e
    }

    #[test]
    fn ids_follow_changes_of_function_like_llvm_xray() {
        // Absolute (version 1) entries: functions A, A, B, B, A (A again after B
        // gets a new id, as in llvm-xray's walk).
        let entries = [
            entry(0x10, 0xa0, 0, 1),
            entry(0x20, 0xa0, 1, 1),
            entry(0x30, 0xb0, 0, 1),
            entry(0x40, 0xb0, 2, 1),
            entry(0x50, 0xa0, 1, 1),
        ];
        let bytes = entries.as_flattened();
        let map = SledMap::parse(bytes, 0x9999).unwrap();
        let mut ids = [0u32; 5];
        for (id, s) in ids.iter_mut().zip(map.iter()) {
            *id = s.function_id;
        }
        assert_eq!(ids, [1, 1, 2, 2, 3]);
        assert_eq!(map.max_function_id(), 3);
        assert_eq!(map.len(), 5);
        let fourth = map.iter().nth(3).unwrap();
        assert_eq!(
            (fourth.kind, fourth.address, fourth.version),
            (SledKind::TailExit, 0x40, 1)
        );
    }

    #[test]
    fn version_2_addresses_count_from_their_own_field() {
        let base = 0x7000usize;
        let e1_at = base + ENTRY_SIZE;
        let (sled, func) = (0x1234usize, 0x1200usize);
        let entries = [
            entry(0, 0, 0, 2),
            // Raw fields worked out by hand, not by `to_entry`.
            entry(sled.wrapping_sub(e1_at), func.wrapping_sub(e1_at + 8), 1, 2),
        ];
        let map = SledMap::parse(entries.as_flattened(), base).unwrap();
        let mut it = map.iter();
        assert_eq!(it.next().unwrap().address, base);
        let second = it.next().unwrap();
        assert_eq!((second.address, second.function), (sled, func));
    }

    #[test]
    fn entries_written_read_back_the_same() {
        // A kernel-half address where `usize` has one; a high one elsewhere.
        let base = (0xffff_8000_0000_1000u64 as usize) | (usize::MAX - usize::MAX / 2);
        for version in 0..=MAX_VERSION {
            for (i, (address, function)) in
                [(0x10usize, 0x8usize), (base, base - 0x40), (0, usize::MAX)]
                    .into_iter()
                    .enumerate()
            {
                let kind = SledKind::from_byte(i as u8).unwrap();
                let sled = Sled {
                    address,
                    function,
                    kind,
                    function_id: 1,
                    version,
                };
                let at = base.wrapping_add(i * 0x1000);
                let read = SledMap::parse(&sled.to_entry(at), at)
                    .unwrap()
                    .iter()
                    .next();
                assert_eq!(read, Some(sled));
            }
        }
    }

    #[test]
    fn unusable_maps_say_why() {
        assert_eq!(SledMap::parse(&[], 0).unwrap_err(), MapError::NoSleds);
        assert_eq!(
            SledMap::parse(&[0; 40], 0).unwrap_err(),
            MapError::Truncated(40)
        );
        let entries = [entry(0, 0, 0, 2), entry(0, 0, 0, 3)];
        let err = SledMap::parse(entries.as_flattened(), 0).unwrap_err();
        assert_eq!(
            err,
            MapError::UnknownVersion {
                index: 1,
                version: 3
            }
        );
        let err = SledMap::parse(&entry(0, 0, 6, 2), 0).unwrap_err();
        assert_eq!(err, MapError::UnknownKind { index: 0, kind: 6 });
    }
}
