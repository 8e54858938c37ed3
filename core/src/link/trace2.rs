//! Compact Trace2 events on the link ([`FrameKind::Trace2Compact`]): a firmware
//! sends an event's kind, its clock reading and its fields as small binary values,
//! and the receiver formats git's lines (the way defmt defers formatting to the
//! host). The firmware links neither the formatters nor any floating point: each
//! event is a small struct whose [`Trace2Event::put_fields`] is inlined where it is
//! sent, so only the events a program uses are in its flash.
//!
//! Strings that are constant (categories, labels, keys, the version) are *interned*
//! by [`trace2_str!`](crate::trace2_str): on a bare-metal target the string is a
//! static in the non-loaded `.flightrec.trace2` section of the ELF (gathered there
//! by `flightrec.x`) and only its address goes on the wire; the receiver reads the
//! text from the ELF (`flightrec recv --elf`). Strings made at run time go as bytes.
//!
//! ```text
//! payload := code:u8  ticks:uv  fields
//! uv      := LEB128 varint of a u64
//! iv      := zigzag LEB128 varint of an i64
//! str     := uv v: 0 none | v odd: interned id v >> 1 | v even: (v >> 1) - 1 bytes follow
//!
//! code  event         fields
//! 0     session       hz:uv  sid:str  thread:str
//! 1     version       exe:str
//! 2     start         n:uv  n × arg:str
//! 3     exit          code:iv
//! 4     atexit        code:iv
//! 5     error         msg:str  fmt:str
//! 6     region_enter  category:str?  label:str?  msg:str?
//! 7     region_leave  category:str?  label:str?  msg:str?
//! 8     data          category:str  key:str  value:str
//! 9     data (int)    category:str  key:str  value:iv
//! 10    printf        msg:str?
//! 11    data_json     category:str  key:str  value:str   (compact JSON text)
//! 12    def_param     scope:str  param:str  value:str?
//! 13    timer         flags:uv  category:str  name:str  intervals:uv  total:uv  min:uv  max:uv
//! 14    counter       flags:uv  category:str  name:str  value:uv
//! ```
//!
//! A timer's `total`, `min` and `max` are in clock ticks (the receiver writes
//! them as git's seconds); `flags` bit 0 marks a per-thread timer or counter
//! (`th_timer`, `th_counter`), the other bits are zero.
//!
//! `ticks` is the firmware clock at the event; a `session` event (sent first, per
//! frame source) gives the clock's frequency, the session id and the thread name,
//! from which the receiver makes `t_abs` (µs since the clock's zero), the region
//! stack, `t_rel` and the nesting. [`parse`] reads any payload without panicking;
//! [`emit`] and [`parse`] round-trip every event.
//!
//! ```
//! use flightrec_core::link::trace2::{emit_to_slice, parse, RegionEnter, Str, Trace2};
//! let ev = RegionEnter { category: Some(Str::Id(12)), label: Some(Str::Bytes(b"workload")), msg: None };
//! let mut buf = [0u8; 32];
//! let n = emit_to_slice(&ev, 1_000, &mut buf).unwrap();
//! assert_eq!(n, 14); // code, 2-byte time, 1-byte id, 1 + 8 bytes of label, no message
//! let rec = parse(&buf[..n]).unwrap();
//! assert_eq!(rec.ticks, 1_000);
//! assert_eq!(rec.event, Trace2::RegionEnter(ev));
//! ```
//!
//! [`FrameKind::Trace2Compact`]: super::FrameKind::Trace2Compact

use crate::trace2::BufferTooSmall;

/// A string field: an interned id (the address of the string in the ELF's
/// `.flightrec.trace2` section) or bytes made at run time.
///
/// ```
/// use flightrec_core::link::trace2::Str;
/// let s = Str::Bytes(b"idle");
/// assert_eq!(s.bytes(), Some(&b"idle"[..]));
/// assert_eq!(Str::Id(5).bytes(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Str<'a> {
    /// An interned string: the receiver looks it up in the firmware's ELF.
    Id(u32),
    /// The string's bytes.
    Bytes(&'a [u8]),
}

impl<'a> Str<'a> {
    /// The bytes of a run-time string; `None` for an interned one. Example on [`Str`].
    pub fn bytes(&self) -> Option<&'a [u8]> {
        match *self {
            Str::Id(_) => None,
            Str::Bytes(b) => Some(b),
        }
    }
}

impl<'a> From<&'a str> for Str<'a> {
    fn from(s: &'a str) -> Self {
        Str::Bytes(s.as_bytes())
    }
}

impl<'a> From<&'a [u8]> for Str<'a> {
    fn from(b: &'a [u8]) -> Self {
        Str::Bytes(b)
    }
}

/// The ELF section (from `flightrec.x`) that holds interned strings, each ending
/// with a NUL, behind one leading NUL so that ids start at 1.
///
/// ```
/// assert_eq!(flightrec_core::link::trace2::SECTION, ".flightrec.trace2");
/// ```
pub const SECTION: &str = ".flightrec.trace2";

/// The bytes of an interned string's static: the string and a NUL. A string with a
/// NUL in it does not compile (the receiver reads up to the first NUL).
///
/// ```
/// use flightrec_core::link::trace2::interned_bytes;
/// const B: [u8; 4] = interned_bytes("abc");
/// assert_eq!(B, *b"abc\0");
/// ```
pub const fn interned_bytes<const N: usize>(s: &str) -> [u8; N] {
    let b = s.as_bytes();
    assert!(b.len() + 1 == N, "interned string: wrong length");
    let mut out = [0u8; N];
    let mut i = 0;
    while i < b.len() {
        assert!(b[i] != 0, "an interned Trace2 string cannot hold a NUL");
        out[i] = b[i];
        i += 1;
    }
    out
}

/// A constant Trace2 string as a [`Str`]: on a bare-metal target (`target_os =
/// "none"`) a static in the non-loaded `.flightrec.trace2` section, sent as its
/// address (link with `-Tflightrec.x`, from the `flightrec` crate, and give the
/// receiver the ELF: `flightrec recv --elf`); elsewhere the string's bytes.
///
/// ```
/// use flightrec_core::link::trace2::Str;
/// // On a desktop target the bytes themselves.
/// assert_eq!(flightrec_core::trace2_str!("firmware"), Str::Bytes(b"firmware"));
/// ```
#[macro_export]
macro_rules! trace2_str {
    ($s:literal) => {{
        #[cfg(target_os = "none")]
        let s = {
            const __FLIGHTREC_T2: &str = $s;
            #[link_section = ".flightrec.trace2.str"]
            #[used]
            static __FLIGHTREC_T2_STR: [u8; __FLIGHTREC_T2.len() + 1] =
                $crate::link::trace2::interned_bytes(__FLIGHTREC_T2);
            $crate::link::trace2::Str::Id(::core::ptr::addr_of!(__FLIGHTREC_T2_STR) as usize as u32)
        };
        #[cfg(not(target_os = "none"))]
        let s = $crate::link::trace2::Str::Bytes(::core::primitive::str::as_bytes($s));
        s
    }};
}

/// Where an event's bytes go: a [`LinkWriter`](super::LinkWriter)'s frame as it is
/// stuffed, or a slice ([`emit_to_slice`]). Example on [`emit`].
pub trait Put {
    /// Appends `bytes`. Example on [`emit`].
    fn put(&mut self, bytes: &[u8]);
}

/// Writes `v` as a LEB128 varint (shifts only: no 64-bit division). One copy for
/// every event (`dyn Put`), not one per event type.
#[inline(never)]
fn put_uv(out: &mut dyn Put, mut v: u64) {
    let mut b = [0u8; 10];
    let mut n = 0;
    while v >= 0x80 && n < 9 {
        b[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    b[n] = v as u8;
    out.put(b.get(..=n).unwrap_or(&[]));
}

#[inline]
fn put_iv(out: &mut dyn Put, v: i64) {
    put_uv(out, ((v << 1) ^ (v >> 63)) as u64);
}

#[inline(never)]
fn put_str(out: &mut dyn Put, s: Option<Str<'_>>) {
    match s {
        None => put_uv(out, 0),
        Some(Str::Id(id)) => put_uv(out, (u64::from(id) << 1) | 1),
        Some(Str::Bytes(b)) => {
            put_uv(out, (b.len() as u64 + 1) << 1);
            out.put(b);
        }
    }
}

/// One kind of compact Trace2 event: its code and how its fields are written.
/// Each event is its own type, so a firmware links only those it sends (the
/// shared varint and string writers once, and a few calls per event type).
///
/// ```
/// use flightrec_core::link::trace2::{Exit, Printf, Put, Str, Trace2Event};
/// struct V(Vec<u8>);
/// impl Put for V { fn put(&mut self, b: &[u8]) { self.0.extend_from_slice(b) } }
/// assert_eq!(Exit { code: 0 }.code(), 3);
/// let mut v = V(Vec::new());
/// Printf { msg: Some(Str::Id(2)) }.put_fields(&mut v);
/// assert_eq!(v.0, [5]); // id 2: 2 << 1 | 1
/// ```
pub trait Trace2Event {
    /// The event's code on the wire (the table in the [module docs](self)).
    /// Example on [`Trace2Event`].
    fn code(&self) -> u8;
    /// Writes the fields after the code and the time. Example on [`Trace2Event`].
    fn put_fields(&self, out: &mut dyn Put);
}

/// Writes one event (code, `ticks`, fields) to `out`.
///
/// ```
/// use flightrec_core::link::trace2::{emit, Exit, Put};
/// struct V(Vec<u8>);
/// impl Put for V { fn put(&mut self, b: &[u8]) { self.0.extend_from_slice(b) } }
/// let mut v = V(Vec::new());
/// emit(&Exit { code: -1 }, 300, &mut v);
/// assert_eq!(v.0, [3, 0xac, 0x02, 1]); // exit, 300, zigzag(-1)
/// ```
pub fn emit(ev: &dyn Trace2Event, ticks: u64, out: &mut dyn Put) {
    out.put(&[ev.code()]);
    put_uv(out, ticks);
    ev.put_fields(out);
}

struct SliceOut<'b> {
    buf: &'b mut [u8],
    len: usize,
    overflow: bool,
}

impl Put for SliceOut<'_> {
    fn put(&mut self, bytes: &[u8]) {
        match self.buf.get_mut(self.len..self.len + bytes.len()) {
            Some(dst) if !self.overflow => {
                dst.copy_from_slice(bytes);
                self.len += bytes.len();
            }
            _ => self.overflow = true,
        }
    }
}

/// Writes one event into `buf`; returns its length. Example on [`parse`].
pub fn emit_to_slice(
    ev: &dyn Trace2Event,
    ticks: u64,
    buf: &mut [u8],
) -> Result<usize, BufferTooSmall> {
    let mut out = SliceOut {
        buf,
        len: 0,
        overflow: false,
    };
    emit(ev, ticks, &mut out);
    if out.overflow {
        Err(BufferTooSmall)
    } else {
        Ok(out.len)
    }
}

/// `session`: the clock frequency, session id and thread name of the frame's
/// source, sent before its other events (and again after a restart). Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Session<'a> {
    /// Ticks per second of the clock the events' times come from.
    pub hz: u64,
    /// The session id (`sid`).
    pub sid: Str<'a>,
    /// The thread name (`main`).
    pub thread: Str<'a>,
}

/// `version`: the program's version. Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Version<'a> {
    /// The version string.
    pub exe: Str<'a>,
}

/// A list of strings: the sender's slice, or one read from the wire.
///
/// ```
/// use flightrec_core::link::trace2::{emit_to_slice, parse, Start, Str, StrList, Trace2};
/// let argv = [Str::Bytes(b"fw"), Str::Id(9)];
/// let mut buf = [0u8; 16];
/// let n = emit_to_slice(&Start { argv: StrList::Slice(&argv) }, 0, &mut buf).unwrap();
/// let Trace2::Start(start) = parse(&buf[..n]).unwrap().event else { panic!() };
/// assert_eq!(start.argv.len(), 2);
/// assert!(start.argv.iter().eq(argv.iter().copied()));
/// ```
#[derive(Clone, Copy, Debug)]
pub enum StrList<'a> {
    /// Strings given by the sender.
    Slice(&'a [Str<'a>]),
    /// `count` strings encoded in `bytes` (checked by [`parse`]).
    Wire {
        /// Number of strings.
        count: u32,
        /// Their encoding.
        bytes: &'a [u8],
    },
}

impl<'a> StrList<'a> {
    /// Number of strings. Example on [`StrList`].
    pub fn len(&self) -> usize {
        match *self {
            StrList::Slice(s) => s.len(),
            StrList::Wire { count, .. } => count as usize,
        }
    }

    /// True when the list is empty.
    ///
    /// ```
    /// assert!(flightrec_core::link::trace2::StrList::Slice(&[]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The strings in order. Example on [`StrList`].
    pub fn iter(&self) -> impl Iterator<Item = Str<'a>> + 'a {
        let this = *self;
        let mut i = 0usize;
        let mut r = match this {
            StrList::Slice(_) => Reader { rest: &[] },
            StrList::Wire { bytes, .. } => Reader { rest: bytes },
        };
        core::iter::from_fn(move || {
            if i >= this.len() {
                return None;
            }
            i += 1;
            match this {
                StrList::Slice(s) => s.get(i - 1).copied(),
                StrList::Wire { .. } => r.str().ok().flatten(),
            }
        })
    }
}

impl PartialEq for StrList<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for StrList<'_> {}

/// `start`: the program's arguments. Example on [`StrList`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start<'a> {
    /// The arguments.
    pub argv: StrList<'a>,
}

/// `exit` with its code. Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Exit {
    /// Exit code.
    pub code: i32,
}

/// `atexit` with the last exit code. Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Atexit {
    /// Exit code.
    pub code: i32,
}

/// `error`: a message and its printf format. Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Error<'a> {
    /// The message.
    pub msg: Str<'a>,
    /// Its format.
    pub fmt: Str<'a>,
}

/// `region_enter`. Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegionEnter<'a> {
    /// Category.
    pub category: Option<Str<'a>>,
    /// Label.
    pub label: Option<Str<'a>>,
    /// Message.
    pub msg: Option<Str<'a>>,
}

/// `region_leave` (its `t_rel` is the time since the matching enter, made by the
/// receiver). Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegionLeave<'a> {
    /// Category.
    pub category: Option<Str<'a>>,
    /// Label.
    pub label: Option<Str<'a>>,
    /// Message.
    pub msg: Option<Str<'a>>,
}

/// `data` with a string value. Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Data<'a> {
    /// Category.
    pub category: Str<'a>,
    /// Key.
    pub key: Str<'a>,
    /// Value.
    pub value: Str<'a>,
}

/// `data` with an integer value (written in decimal by the receiver). Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataInt<'a> {
    /// Category.
    pub category: Str<'a>,
    /// Key.
    pub key: Str<'a>,
    /// Value.
    pub value: i64,
}

/// `printf`: a message. Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Printf<'a> {
    /// Message (`None`: no message).
    pub msg: Option<Str<'a>>,
}

/// `data_json`: a key with a JSON value the sender made (compact JSON text,
/// inserted verbatim by the receiver). Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataJson<'a> {
    /// Category.
    pub category: Str<'a>,
    /// Key.
    pub key: Str<'a>,
    /// The JSON value, e.g. `{"free":512,"used":3584}`.
    pub value: Str<'a>,
}

/// `def_param`: a setting the program runs with. Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DefParam<'a> {
    /// Where it comes from (git's scopes: `system`, `global`, ..., or the
    /// program's own, e.g. `build`).
    pub scope: Str<'a>,
    /// Its name.
    pub param: Str<'a>,
    /// Its value (`None`: a setting without one).
    pub value: Option<Str<'a>>,
}

/// `timer` (or `th_timer`): a stopwatch the program kept, its intervals and
/// their total, shortest and longest time in clock ticks. Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Timer<'a> {
    /// Per-thread (`th_timer`) rather than for the whole program (`timer`).
    pub per_thread: bool,
    /// Category.
    pub category: Str<'a>,
    /// Name.
    pub name: Str<'a>,
    /// How many intervals were timed.
    pub intervals: u64,
    /// Their total, in ticks.
    pub total_ticks: u64,
    /// The shortest, in ticks.
    pub min_ticks: u64,
    /// The longest, in ticks.
    pub max_ticks: u64,
}

/// `counter` (or `th_counter`): a count the program kept. Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Counter<'a> {
    /// Per-thread (`th_counter`) rather than for the whole program (`counter`).
    pub per_thread: bool,
    /// Category.
    pub category: Str<'a>,
    /// Name.
    pub name: Str<'a>,
    /// The count.
    pub value: u64,
}

impl Trace2Event for Session<'_> {
    fn code(&self) -> u8 {
        0
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_uv(out, self.hz);
        put_str(out, Some(self.sid));
        put_str(out, Some(self.thread));
    }
}

impl Trace2Event for Version<'_> {
    fn code(&self) -> u8 {
        1
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_str(out, Some(self.exe));
    }
}

impl Trace2Event for Start<'_> {
    fn code(&self) -> u8 {
        2
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_uv(out, self.argv.len() as u64);
        for s in self.argv.iter() {
            put_str(out, Some(s));
        }
    }
}

impl Trace2Event for Exit {
    fn code(&self) -> u8 {
        3
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_iv(out, i64::from(self.code));
    }
}

impl Trace2Event for Atexit {
    fn code(&self) -> u8 {
        4
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_iv(out, i64::from(self.code));
    }
}

impl Trace2Event for Error<'_> {
    fn code(&self) -> u8 {
        5
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_str(out, Some(self.msg));
        put_str(out, Some(self.fmt));
    }
}

impl Trace2Event for RegionEnter<'_> {
    fn code(&self) -> u8 {
        6
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_str(out, self.category);
        put_str(out, self.label);
        put_str(out, self.msg);
    }
}

impl Trace2Event for RegionLeave<'_> {
    fn code(&self) -> u8 {
        7
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_str(out, self.category);
        put_str(out, self.label);
        put_str(out, self.msg);
    }
}

impl Trace2Event for Data<'_> {
    fn code(&self) -> u8 {
        8
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_str(out, Some(self.category));
        put_str(out, Some(self.key));
        put_str(out, Some(self.value));
    }
}

impl Trace2Event for DataInt<'_> {
    fn code(&self) -> u8 {
        9
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_str(out, Some(self.category));
        put_str(out, Some(self.key));
        put_iv(out, self.value);
    }
}

impl Trace2Event for Printf<'_> {
    fn code(&self) -> u8 {
        10
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_str(out, self.msg);
    }
}

impl Trace2Event for DataJson<'_> {
    fn code(&self) -> u8 {
        11
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_str(out, Some(self.category));
        put_str(out, Some(self.key));
        put_str(out, Some(self.value));
    }
}

impl Trace2Event for DefParam<'_> {
    fn code(&self) -> u8 {
        12
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_str(out, Some(self.scope));
        put_str(out, Some(self.param));
        put_str(out, self.value);
    }
}

impl Trace2Event for Timer<'_> {
    fn code(&self) -> u8 {
        13
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_uv(out, u64::from(self.per_thread));
        put_str(out, Some(self.category));
        put_str(out, Some(self.name));
        put_uv(out, self.intervals);
        put_uv(out, self.total_ticks);
        put_uv(out, self.min_ticks);
        put_uv(out, self.max_ticks);
    }
}

impl Trace2Event for Counter<'_> {
    fn code(&self) -> u8 {
        14
    }
    fn put_fields(&self, out: &mut dyn Put) {
        put_uv(out, u64::from(self.per_thread));
        put_str(out, Some(self.category));
        put_str(out, Some(self.name));
        put_uv(out, self.value);
    }
}

/// Any compact event, as [`parse`] reads it. Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trace2<'a> {
    /// Code 0.
    Session(Session<'a>),
    /// Code 1.
    Version(Version<'a>),
    /// Code 2.
    Start(Start<'a>),
    /// Code 3.
    Exit(Exit),
    /// Code 4.
    Atexit(Atexit),
    /// Code 5.
    Error(Error<'a>),
    /// Code 6.
    RegionEnter(RegionEnter<'a>),
    /// Code 7.
    RegionLeave(RegionLeave<'a>),
    /// Code 8.
    Data(Data<'a>),
    /// Code 9.
    DataInt(DataInt<'a>),
    /// Code 10.
    Printf(Printf<'a>),
    /// Code 11.
    DataJson(DataJson<'a>),
    /// Code 12.
    DefParam(DefParam<'a>),
    /// Code 13.
    Timer(Timer<'a>),
    /// Code 14.
    Counter(Counter<'a>),
}

impl Trace2<'_> {
    /// Writes the event with `ticks` (for tests and host-side senders; a firmware
    /// calls [`emit`] with the one event type it sends, which links only that).
    ///
    /// ```
    /// use flightrec_core::link::trace2::{parse, Exit, Put, Trace2};
    /// struct V(Vec<u8>);
    /// impl Put for V { fn put(&mut self, b: &[u8]) { self.0.extend_from_slice(b) } }
    /// let mut v = V(Vec::new());
    /// Trace2::Exit(Exit { code: 0 }).emit(5, &mut v);
    /// assert_eq!(parse(&v.0).unwrap().event, Trace2::Exit(Exit { code: 0 }));
    /// ```
    pub fn emit(&self, ticks: u64, out: &mut dyn Put) {
        match self {
            Trace2::Session(e) => emit(e, ticks, out),
            Trace2::Version(e) => emit(e, ticks, out),
            Trace2::Start(e) => emit(e, ticks, out),
            Trace2::Exit(e) => emit(e, ticks, out),
            Trace2::Atexit(e) => emit(e, ticks, out),
            Trace2::Error(e) => emit(e, ticks, out),
            Trace2::RegionEnter(e) => emit(e, ticks, out),
            Trace2::RegionLeave(e) => emit(e, ticks, out),
            Trace2::Data(e) => emit(e, ticks, out),
            Trace2::DataInt(e) => emit(e, ticks, out),
            Trace2::Printf(e) => emit(e, ticks, out),
            Trace2::DataJson(e) => emit(e, ticks, out),
            Trace2::DefParam(e) => emit(e, ticks, out),
            Trace2::Timer(e) => emit(e, ticks, out),
            Trace2::Counter(e) => emit(e, ticks, out),
        }
    }
}

/// One parsed payload: the clock reading and the event. Example on [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// The firmware clock at the event.
    pub ticks: u64,
    /// The event.
    pub event: Trace2<'a>,
}

/// Why a payload is not a compact Trace2 event.
///
/// ```
/// use flightrec_core::link::trace2::{parse, ParseError};
/// assert_eq!(parse(&[]), Err(ParseError::Truncated));
/// assert_eq!(parse(&[99, 0]), Err(ParseError::Code(99)));
/// assert_eq!(parse(&[3, 0, 0, 7]), Err(ParseError::Trailing)); // exit 0, then a stray byte
/// assert_eq!(parse(&[1, 0, 0]), Err(ParseError::MissingString)); // version without its exe
/// assert_eq!(parse(&[1, 0, 20, b'a']), Err(ParseError::Truncated)); // 9 bytes announced
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ParseError {
    /// The payload ends inside a field.
    Truncated,
    /// An unknown event code.
    Code(u8),
    /// A varint longer than 10 bytes, or a value out of its field's range.
    Varint,
    /// A string field that must be present is none.
    MissingString,
    /// Bytes after the last field.
    Trailing,
}

impl core::fmt::Display for ParseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ParseError::Truncated => f.write_str("the payload ends inside a field"),
            ParseError::Code(c) => write!(f, "unknown Trace2 event code {c}"),
            ParseError::Varint => f.write_str("a varint is too long or out of range"),
            ParseError::MissingString => f.write_str("a required string is missing"),
            ParseError::Trailing => f.write_str("bytes after the last field"),
        }
    }
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Result<u8, ParseError> {
        let (&b, rest) = self.rest.split_first().ok_or(ParseError::Truncated)?;
        self.rest = rest;
        Ok(b)
    }

    fn uv(&mut self) -> Result<u64, ParseError> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.u8()?;
            let bits = u64::from(b & 0x7f);
            if i == 9 && bits > 1 {
                return Err(ParseError::Varint);
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(ParseError::Varint)
    }

    fn iv(&mut self) -> Result<i64, ParseError> {
        let z = self.uv()?;
        Ok((z >> 1) as i64 ^ -((z & 1) as i64))
    }

    fn i32(&mut self) -> Result<i32, ParseError> {
        i32::try_from(self.iv()?).map_err(|_| ParseError::Varint)
    }

    fn str(&mut self) -> Result<Option<Str<'a>>, ParseError> {
        let v = self.uv()?;
        if v == 0 {
            return Ok(None);
        }
        if v & 1 == 1 {
            return u32::try_from(v >> 1)
                .map(|id| Some(Str::Id(id)))
                .map_err(|_| ParseError::Varint);
        }
        let len = usize::try_from((v >> 1) - 1).map_err(|_| ParseError::Varint)?;
        if len > self.rest.len() {
            return Err(ParseError::Truncated);
        }
        let (b, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(Some(Str::Bytes(b)))
    }

    fn some_str(&mut self) -> Result<Str<'a>, ParseError> {
        self.str()?.ok_or(ParseError::MissingString)
    }

    /// A timer's or counter's flags: bit 0, per thread; no other bit is defined.
    fn per_thread(&mut self) -> Result<bool, ParseError> {
        match self.uv()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(ParseError::Varint),
        }
    }
}

/// Reads one compact Trace2 payload. Never panics; see [`ParseError`] for what it
/// rejects.
///
/// ```
/// use flightrec_core::link::trace2::*;
/// let (id, b) = (Str::Id(7), Str::Bytes(b"run-time"));
/// let events = [
///     Trace2::Session(Session { hz: 32_768, sid: id, thread: b }),
///     Trace2::Version(Version { exe: id }),
///     Trace2::Exit(Exit { code: -1 }),
///     Trace2::Atexit(Atexit { code: 0 }),
///     Trace2::Error(Error { msg: b, fmt: id }),
///     Trace2::RegionEnter(RegionEnter { category: Some(id), label: None, msg: Some(b) }),
///     Trace2::RegionLeave(RegionLeave { category: Some(id), label: None, msg: Some(b) }),
///     Trace2::Data(Data { category: id, key: id, value: b }),
///     Trace2::DataInt(DataInt { category: id, key: id, value: i64::MIN }),
///     Trace2::Printf(Printf { msg: None }),
///     Trace2::DataJson(DataJson { category: id, key: id, value: Str::Bytes(b"{\"free\":512}") }),
///     Trace2::DefParam(DefParam { scope: id, param: id, value: None }),
///     Trace2::Timer(Timer {
///         per_thread: true, category: id, name: b, intervals: 3, total_ticks: 900, min_ticks: 100, max_ticks: 500,
///     }),
///     Trace2::Counter(Counter { per_thread: false, category: id, name: b, value: u64::MAX }),
/// ];
/// let mut buf = [0u8; 64];
/// for (i, ev) in events.into_iter().enumerate() {
///     let n = match ev {
///         Trace2::Session(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::Version(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::Exit(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::Atexit(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::Error(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::RegionEnter(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::RegionLeave(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::Data(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::DataInt(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::Printf(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::Start(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::DataJson(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::DefParam(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::Timer(e) => emit_to_slice(&e, 1, &mut buf),
///         Trace2::Counter(e) => emit_to_slice(&e, 1, &mut buf),
///     }
///     .unwrap();
///     assert_eq!(buf[0], [0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14][i]); // the event's code
///     assert_eq!(parse(&buf[..n]), Ok(Record { ticks: 1, event: ev }));
/// }
/// ```
pub fn parse(payload: &[u8]) -> Result<Record<'_>, ParseError> {
    let mut r = Reader { rest: payload };
    let code = r.u8()?;
    let ticks = r.uv()?;
    let event = match code {
        0 => Trace2::Session(Session {
            hz: r.uv()?,
            sid: r.some_str()?,
            thread: r.some_str()?,
        }),
        1 => Trace2::Version(Version { exe: r.some_str()? }),
        2 => {
            let count = u32::try_from(r.uv()?).map_err(|_| ParseError::Varint)?;
            let start = r.rest;
            for _ in 0..count {
                r.some_str()?;
            }
            let used = start.len() - r.rest.len();
            Trace2::Start(Start {
                argv: StrList::Wire {
                    count,
                    bytes: start.get(..used).unwrap_or(&[]),
                },
            })
        }
        3 => Trace2::Exit(Exit { code: r.i32()? }),
        4 => Trace2::Atexit(Atexit { code: r.i32()? }),
        5 => Trace2::Error(Error {
            msg: r.some_str()?,
            fmt: r.some_str()?,
        }),
        6 => Trace2::RegionEnter(RegionEnter {
            category: r.str()?,
            label: r.str()?,
            msg: r.str()?,
        }),
        7 => Trace2::RegionLeave(RegionLeave {
            category: r.str()?,
            label: r.str()?,
            msg: r.str()?,
        }),
        8 => Trace2::Data(Data {
            category: r.some_str()?,
            key: r.some_str()?,
            value: r.some_str()?,
        }),
        9 => Trace2::DataInt(DataInt {
            category: r.some_str()?,
            key: r.some_str()?,
            value: r.iv()?,
        }),
        10 => Trace2::Printf(Printf { msg: r.str()? }),
        11 => Trace2::DataJson(DataJson {
            category: r.some_str()?,
            key: r.some_str()?,
            value: r.some_str()?,
        }),
        12 => Trace2::DefParam(DefParam {
            scope: r.some_str()?,
            param: r.some_str()?,
            value: r.str()?,
        }),
        13 => Trace2::Timer(Timer {
            per_thread: r.per_thread()?,
            category: r.some_str()?,
            name: r.some_str()?,
            intervals: r.uv()?,
            total_ticks: r.uv()?,
            min_ticks: r.uv()?,
            max_ticks: r.uv()?,
        }),
        14 => Trace2::Counter(Counter {
            per_thread: r.per_thread()?,
            category: r.some_str()?,
            name: r.some_str()?,
            value: r.uv()?,
        }),
        c => return Err(ParseError::Code(c)),
    };
    if !r.rest.is_empty() {
        return Err(ParseError::Trailing);
    }
    Ok(Record { ticks, event })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_at_the_edges() {
        for v in [
            0,
            1,
            0x7f,
            0x80,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut buf = [0u8; 16];
            let n = emit_to_slice(
                &DataInt {
                    category: Str::Id(1),
                    key: Str::Id(2),
                    value: v as i64,
                },
                v,
                &mut buf,
            )
            .unwrap();
            let rec = parse(&buf[..n]).unwrap();
            assert_eq!(rec.ticks, v);
            assert_eq!(
                rec.event,
                Trace2::DataInt(DataInt {
                    category: Str::Id(1),
                    key: Str::Id(2),
                    value: v as i64
                })
            );
        }
        // An 11-byte varint, and a 10th byte with more than one bit.
        assert_eq!(
            parse(&[3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0]),
            Err(ParseError::Varint)
        );
        assert_eq!(
            parse(&[3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]),
            Err(ParseError::Varint)
        );
        // An exit code beyond i32.
        assert_eq!(
            parse(&[3, 0, 0x80, 0x80, 0x80, 0x80, 0x20]),
            Err(ParseError::Varint)
        );
    }

    #[test]
    fn undefined_timer_and_counter_flags_are_rejected() {
        let mut buf = [0u8; 32];
        let ev = Counter {
            per_thread: true,
            category: Str::Id(1),
            name: Str::Id(2),
            value: 5,
        };
        let n = emit_to_slice(&ev, 0, &mut buf).unwrap();
        assert_eq!(&buf[..3], [14, 0, 1]); // code, time, flags
        assert_eq!(parse(&buf[..n]).unwrap().event, Trace2::Counter(ev));
        buf[2] = 2;
        assert_eq!(parse(&buf[..n]), Err(ParseError::Varint));
    }

    #[test]
    fn too_small_a_slice_is_an_error() {
        let ev = Version {
            exe: Str::Bytes(b"0.1.0"),
        };
        // Code, time, length, 5 bytes.
        let mut buf = [0u8; 8];
        assert_eq!(emit_to_slice(&ev, 0, &mut buf[..7]), Err(BufferTooSmall));
        assert_eq!(emit_to_slice(&ev, 0, &mut buf), Ok(8));
    }
}
