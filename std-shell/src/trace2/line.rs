//! One Trace2 line formatted into a growable buffer, for the direct writers
//! (`emit`) and the background queue's gap markers (`gap`) alike.

use flightrec_core::trace2::{Event, Format, LineCtx};

/// Longest line the runtime formats (a line that does not fit is dropped).
pub(crate) const MAX_LINE: usize = 16 << 20;

/// Formats one line, growing `buf` until it fits (up to [`MAX_LINE`]); 0 when
/// the target writes nothing or the line is too long.
pub(crate) fn format_into(
    f: &Format,
    ctx: &LineCtx<'_>,
    ev: &Event<'_>,
    buf: &mut Vec<u8>,
) -> usize {
    if buf.len() < 512 {
        buf.resize(512, 0);
    }
    loop {
        match f.write_line(ctx, ev, buf) {
            Ok(n) => return n,
            Err(_) if buf.len() < MAX_LINE => {
                let len = (buf.len() * 2).min(MAX_LINE);
                buf.resize(len, 0);
            }
            Err(_) => return 0,
        }
    }
}
