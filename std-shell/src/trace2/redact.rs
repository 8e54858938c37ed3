//! Git's redaction of arguments and parameter values (`GIT_TRACE2_REDACT`,
//! on by default): the password of a URL becomes `<REDACTED>`.

use std::borrow::Cow;

use flightrec_core::trace2::redact_url;

use super::runtime::Runtime;

/// Git's redaction of an argument (when `GIT_TRACE2_REDACT` is on).
pub(crate) fn redact<'a>(rt: &Runtime, arg: &'a [u8]) -> Cow<'a, [u8]> {
    if !rt.cfg.redact {
        return Cow::Borrowed(arg);
    }
    match redact_url(arg) {
        Some(r) => {
            let mut v = vec![0; r.len()];
            match r.write_into(&mut v) {
                Ok(n) => v.truncate(n),
                Err(_) => return Cow::Borrowed(arg),
            }
            Cow::Owned(v)
        }
        None => Cow::Borrowed(arg),
    }
}

/// Redacts every argument.
pub(crate) fn redact_all<'a, I: IntoIterator<Item = &'a [u8]>>(
    rt: &Runtime,
    args: I,
) -> Vec<Cow<'a, [u8]>> {
    args.into_iter().map(|a| redact(rt, a)).collect()
}

/// Borrowed views of owned arguments, for
/// [`Args::Bytes`](flightrec_core::trace2::Args::Bytes).
pub(crate) fn views<'a>(args: &'a [Cow<'a, [u8]>]) -> Vec<&'a [u8]> {
    args.iter().map(|a| a.as_ref()).collect()
}
