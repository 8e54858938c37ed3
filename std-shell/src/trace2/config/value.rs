//! How git reads a config value: booleans, integers with units, `atoi`, and
//! git's idea of white space. A leaf: it imports nothing of the config module.

/// git's `isspace` (`sane_ctype`): space, TAB, LF and CR; not VT or FF.
///
/// ```
/// use flightrec::trace2::config::is_git_space;
/// assert!(is_git_space(b'\r') && !is_git_space(0x0b));
/// ```
pub fn is_git_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// git's `git_parse_maybe_bool`: `Some(bool)`, or `None` when unparsable.
///
/// `true`/`yes`/`on` and `false`/`no`/`off` in any case, the empty string
/// (false), or an integer as git reads one (`strtoimax` base 0, an optional
/// `k`/`m`/`g` unit): non-zero is true.
///
/// ```
/// use flightrec::trace2::config::parse_maybe_bool;
/// assert_eq!(parse_maybe_bool("YES"), Some(true));
/// assert_eq!(parse_maybe_bool("1k"), Some(true));
/// assert_eq!(parse_maybe_bool("0x0"), Some(false));
/// assert_eq!(parse_maybe_bool("junk"), None);
/// ```
pub fn parse_maybe_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" | "" => Some(false),
        other => parse_git_int(other).map(|n| n != 0),
    }
}

/// git's `git_parse_signed` into an `int`: `strtoimax(v, &end, 0)` then an
/// optional unit `k`, `m` or `g` (any case) and nothing else; `None` on junk
/// or overflow.
fn parse_git_int(v: &str) -> Option<i64> {
    // strtoimax skips C's isspace, which includes VT (is_ascii_whitespace does not).
    let t = v.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (16, h)
    } else if t.len() > 1 && t.starts_with('0') {
        (8, &t[1..])
    } else {
        (10, t)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 && radix != 8 {
        return None;
    }
    let n = if end == 0 {
        0
    } else {
        i64::from_str_radix(&digits[..end], radix).ok()?
    };
    let factor: i64 = match digits[end..].to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return None,
    };
    let n = n.checked_mul(factor)?;
    let n = if neg { -n } else { n };
    i32::try_from(n).ok().map(i64::from)
}

/// C's `atoi`: leading whitespace, optional sign, digits; 0 when none.
///
/// ```
/// use flightrec::trace2::config::atoi;
/// assert_eq!(atoi(" 12x"), 12);
/// assert_eq!(atoi("-1"), -1);
/// assert_eq!(atoi("true"), 0);
/// ```
pub fn atoi(v: &str) -> i64 {
    let t = v.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut n: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if neg {
        -n
    } else {
        n
    }
}
