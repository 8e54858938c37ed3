use super::*;
use crate::link::frame::{FrameKind, HEAD_LEN};

/// A xorshift generator of 32-bit values from `seed` (not 0): the tests'
/// inputs, the same on every run.
fn xorshift32(mut seed: u32) -> impl FnMut() -> u32 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    }
}

/// A frame's head and end (its check, the last block and the delimiter)
/// are the `cobs` crate's stuffing of the frame's bytes, whatever the
/// head's and the check's bytes (zeros among them) and however full the
/// last block is: the head's and the check's ways without `push`, and
/// `push`'s way for a block too full for the check.
#[test]
fn frame_ends_are_standard_cobs() {
    let mut next = xorshift32(0x68E3_1DA4);
    for n in 0..runs(20_000) {
        let mut payload = [0u8; 700];
        let len = next() as usize % payload.len();
        // Runs without a zero, of any length (blocks full or nearly so at
        // the end), or zeros now and then.
        let zeros = next() % 4;
        for b in &mut payload[..len] {
            *b = if zeros > 0 && next() % (8 << zeros) == 0 {
                0
            } else {
                1 + (next() % 255) as u8
            };
        }
        let payload = &payload[..len];
        let mut check = next();
        for i in 0..4 {
            if next() % 4 == 0 {
                check &= !(0xFF << (8 * i));
            }
        }
        let lead = n % 2 == 0;
        let mut sink = [0u8; 1024];
        let mut to: &mut [u8] = &mut sink;
        let mut out = [0u8; OUT];
        // A head of any source and sequence number, zero bytes and all.
        let pick = |r: u32| match r % 4 {
            0 => 0,
            1 => r >> 24,
            2 => r & 0xFF00_FF00,
            _ => r,
        };
        let head = FrameHead {
            kind: FrameKind::FdrPacked,
            source: pick(next()),
            seq: pick(next()) as u16,
        };
        let mut s = Stuffer::with_head(&mut to, &mut out, lead, &head);
        s.push(payload);
        let mut frame_check = crc::Crc32c::new();
        frame_check.update(&head.to_bytes());
        frame_check.update(payload);
        assert_eq!(
            s.crc.finish(),
            frame_check.finish(),
            "run {n}: the check of head and payload"
        );
        s.crc = crc::Crc32c::finishing_as(check);
        s.finish().unwrap();
        let left = to.len();
        let written = &sink[..sink.len() - left];

        let mut frame = [0u8; HEAD_LEN + 704];
        frame[..HEAD_LEN].copy_from_slice(&head.to_bytes());
        frame[HEAD_LEN..HEAD_LEN + len].copy_from_slice(payload);
        frame[HEAD_LEN + len..HEAD_LEN + len + 4].copy_from_slice(&check.to_le_bytes());
        let len = HEAD_LEN + len;
        let mut want = [0u8; 1024];
        let start = usize::from(lead);
        let end = start + cobs::encode(&frame[..len + 4], &mut want[start..]);
        // The closing delimiter (`encode` may have put the code of an empty
        // last block there, which it does not count).
        want[end] = 0;
        assert_eq!(
            written,
            &want[..end + 1],
            "run {n}: {len} bytes, check {check:#010x}"
        );
    }
}

/// Room for the longest frame the property test makes.
const ROOM: usize = 2048;

/// The whole frame a [`Stuffer`] makes of `head` and `payload` (pushed in
/// pieces of `piece` bytes), with a leading delimiter if `lead`; its length.
fn stuffed(
    head: &FrameHead,
    payload: &[u8],
    piece: usize,
    lead: bool,
    frame: &mut [u8; ROOM],
) -> usize {
    let mut to: &mut [u8] = frame;
    let mut out = [0u8; OUT];
    let mut s = Stuffer::with_head(&mut to, &mut out, lead, head);
    for part in payload.chunks(piece.max(1)) {
        s.push(part);
    }
    s.finish().unwrap();
    ROOM - to.len()
}

/// The reference's frame: [`FrameEncoder`](crate::link::FrameEncoder) filled
/// a few bytes at a time; its length.
fn encoded(head: &FrameHead, payload: &[u8], lead: bool, frame: &mut [u8; ROOM]) -> usize {
    let mut e = crate::link::FrameEncoder::new(*head, payload).with_leading_delimiter(lead);
    let mut len = 0;
    while !e.is_done() {
        let end = (len + 37).min(ROOM);
        len += e.fill(&mut frame[len..end]);
    }
    len
}

proptest::proptest! {
    /// The twin writes what its reference writes: any head, any payload (runs
    /// of zeros and of non-zero bytes across block ends), pushed in pieces of
    /// any size, with and without a leading delimiter.
    #[test]
    fn stuffer_writes_what_the_frame_encoder_writes(
        source in proptest::prop_oneof![proptest::strategy::Just(0u32), proptest::num::u32::ANY],
        seq in proptest::num::u16::ANY,
        payload in proptest::collection::vec(
            proptest::prop_oneof![3 => 1u8..=255, 1 => proptest::strategy::Just(0u8)],
            0..1200,
        ),
        piece in 1usize..600,
        lead in proptest::bool::ANY,
    ) {
        let head = FrameHead { kind: FrameKind::FdrBuffer, source, seq };
        let (mut twin, mut reference) = ([0u8; ROOM], [0u8; ROOM]);
        let n = stuffed(&head, &payload, piece, lead, &mut twin);
        let m = encoded(&head, &payload, lead, &mut reference);
        proptest::prop_assert_eq!(&twin[..n], &reference[..m]);
    }
}

/// `n` runs of a loop of checks, or a few dozen under Miri, which runs each
/// a thousand times slower.
fn runs(n: u32) -> u32 {
    if cfg!(miri) {
        n.min(40)
    } else {
        n
    }
}
