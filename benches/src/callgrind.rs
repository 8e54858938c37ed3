//! Instruction counts of hot paths with valgrind's callgrind (`--bench
//! instructions`), checked against a baseline file kept in the repository.
//!
//! An instruction count does not depend on how busy the machine is, so a
//! regression shows on a noisy CI machine without timing anything. Each hot
//! path runs a known number of operations inside one function that callgrind
//! collects (`--toggle-collect`); the count per operation is compared with the
//! baseline. More than the tolerance above the baseline is a regression; more
//! than the tolerance below asks for the baseline to be updated.
//!
//! ```
//! use flightrec_benches::callgrind::{parse_total, Baseline, Verdict};
//! let out = "events: Ir\nsummary: 52000\ntotals: 52000\n";
//! let per_op = parse_total(out).unwrap() as f64 / 1000.0;
//! let baseline = Baseline::parse("fdr_pair 50.00\n").unwrap();
//! assert_eq!(baseline.check("fdr_pair", per_op, 3.0), Verdict::Regressed { baseline: 50.0, percent: 4.0 });
//! ```

use std::collections::BTreeMap;
use std::fmt;

/// The total of collected instructions (`Ir`) in a callgrind output file: its
/// `totals:` line, or its `summary:` line when there is no `totals:`.
///
/// ```
/// use flightrec_benches::callgrind::parse_total;
/// assert_eq!(parse_total("events: Ir\nsummary: 5007\n"), Some(5007));
/// assert_eq!(parse_total("events: Ir\n"), None);
/// ```
pub fn parse_total(callgrind_out: &str) -> Option<u64> {
    let find = |key: &str| {
        callgrind_out
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    };
    find("totals:").or_else(|| find("summary:"))
}

/// Instructions per operation of each hot path, as kept in the baseline file:
/// one `name value` pair per line, `#` starts a comment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Baseline {
    /// Instructions per operation by hot path name.
    pub per_op: BTreeMap<String, f64>,
}

/// A malformed baseline line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadLine {
    /// 1-based line number.
    pub line: usize,
    /// The line's text.
    pub text: String,
}

impl fmt::Display for BadLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "baseline line {}: expected `name instructions`, got {:?}",
            self.line, self.text
        )
    }
}

impl std::error::Error for BadLine {}

/// How a measured count compares with the baseline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// Within the tolerance.
    Unchanged {
        /// Baseline instructions per operation.
        baseline: f64,
        /// Change in percent (negative: fewer instructions).
        percent: f64,
    },
    /// More instructions than the baseline plus the tolerance.
    Regressed {
        /// Baseline instructions per operation.
        baseline: f64,
        /// Change in percent.
        percent: f64,
    },
    /// Fewer instructions than the baseline minus the tolerance.
    Improved {
        /// Baseline instructions per operation.
        baseline: f64,
        /// Change in percent.
        percent: f64,
    },
    /// The baseline has no entry for this hot path.
    NoBaseline,
}

impl Baseline {
    /// Parses the baseline file's text.
    pub fn parse(text: &str) -> Result<Self, BadLine> {
        let mut per_op = BTreeMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = || BadLine {
                line: i + 1,
                text: raw.to_owned(),
            };
            let mut words = line.split_whitespace();
            let (Some(name), Some(value), None) = (words.next(), words.next(), words.next()) else {
                return Err(bad());
            };
            let value: f64 = value.parse().map_err(|_| bad())?;
            if !value.is_finite() || value <= 0.0 {
                return Err(bad());
            }
            per_op.insert(name.to_owned(), value);
        }
        Ok(Baseline { per_op })
    }

    /// The file's text, with `header` as leading comment lines.
    ///
    /// ```
    /// use flightrec_benches::callgrind::Baseline;
    /// let mut b = Baseline::default();
    /// b.per_op.insert("floor_pair".into(), 12.0);
    /// let text = b.render("per operation");
    /// assert_eq!(text, "# per operation\nfloor_pair 12.00\n");
    /// assert_eq!(Baseline::parse(&text).unwrap(), b);
    /// ```
    pub fn render(&self, header: &str) -> String {
        let mut out = String::new();
        for l in header.lines() {
            out.push_str("# ");
            out.push_str(l);
            out.push('\n');
        }
        for (name, v) in &self.per_op {
            out.push_str(&format!("{name} {v:.2}\n"));
        }
        out
    }

    /// Compares `per_op` instructions of hot path `name` with the baseline,
    /// allowing `tolerance_percent` either way.
    pub fn check(&self, name: &str, per_op: f64, tolerance_percent: f64) -> Verdict {
        let Some(&baseline) = self.per_op.get(name) else {
            return Verdict::NoBaseline;
        };
        let percent = (per_op - baseline) / baseline * 100.0;
        // Rounded to the baseline file's precision, so a value read back from the
        // file compares equal to itself.
        let percent = (percent * 1e6).round() / 1e6;
        if percent > tolerance_percent {
            Verdict::Regressed { baseline, percent }
        } else if percent < -tolerance_percent {
            Verdict::Improved { baseline, percent }
        } else {
            Verdict::Unchanged { baseline, percent }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_prefers_totals_and_ignores_other_lines() {
        let out = "# callgrind format\nversion: 1\nevents: Ir\nfn=(1) ir_fdr_pair\n16 5\nsummary: 70\ntotals: 71\n";
        assert_eq!(parse_total(out), Some(71));
        assert_eq!(parse_total("summary: x\n"), None);
        assert_eq!(parse_total(""), None);
    }

    #[test]
    fn baseline_parses_comments_and_rejects_bad_lines() {
        let b = Baseline::parse("# header\n\nfdr_pair 48.5 # pair\nfloor_pair 12\n").unwrap();
        assert_eq!(b.per_op.len(), 2);
        assert_eq!(b.per_op["fdr_pair"], 48.5);
        assert_eq!(
            Baseline::parse("fdr_pair\n"),
            Err(BadLine {
                line: 1,
                text: "fdr_pair".into()
            })
        );
        assert!(Baseline::parse("a 1 2\n").is_err());
        assert!(Baseline::parse("a x\n").is_err());
        assert!(Baseline::parse("a -3\n").is_err());
        assert!(Baseline::parse("a 0\n").is_err());
    }

    #[test]
    fn check_flags_regressions_and_improvements_beyond_the_tolerance() {
        let b = Baseline::parse("p 100\n").unwrap();
        assert_eq!(
            b.check("p", 102.0, 3.0),
            Verdict::Unchanged {
                baseline: 100.0,
                percent: 2.0
            }
        );
        assert_eq!(
            b.check("p", 103.5, 3.0),
            Verdict::Regressed {
                baseline: 100.0,
                percent: 3.5
            }
        );
        assert_eq!(
            b.check("p", 90.0, 3.0),
            Verdict::Improved {
                baseline: 100.0,
                percent: -10.0
            }
        );
        assert_eq!(b.check("q", 1.0, 3.0), Verdict::NoBaseline);
    }

    #[test]
    fn a_rendered_baseline_reads_back_unchanged() {
        let b = Baseline::parse("b 33.333\na 7.5\n").unwrap();
        let again = Baseline::parse(&b.render("h1\nh2")).unwrap();
        assert_eq!(again.per_op["a"], 7.5);
        assert_eq!(again.per_op["b"], 33.33);
        assert!(matches!(
            again.check("b", 33.333, 0.1),
            Verdict::Unchanged { .. }
        ));
    }
}
