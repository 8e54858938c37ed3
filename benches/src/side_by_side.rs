//! The table of the side-by-side comparison (`--bench compare`): samples per
//! subject, medians, the cost net of a baseline, and ratios to a reference row.
//!
//! Each row holds every per-batch sample (nanoseconds per call) gathered over
//! all rounds. A row may name a *baseline* row (the same loop without tracing,
//! in the same language): its *net* cost is its median minus the baseline's,
//! i.e. what tracing adds to a call. Ratios divide net costs by the net cost
//! of the table's reference row.
//!
//! ```
//! use flightrec_benches::side_by_side::{Row, Table};
//! let mut t = Table::new("FDR", "floor", "floor");
//! t.push(Row::measured("call", "call only", None, vec![2.0, 2.0, 2.0]));
//! t.push(Row::measured("floor", "floor", Some("call"), vec![22.0, 21.0, 23.0]));
//! t.push(Row::measured("rec", "recorder", Some("call"), vec![26.0, 25.0, 27.0]));
//! t.push(Row::not_available("shell", "std shell", "not on this branch yet"));
//! assert_eq!(t.net("rec"), Some(24.0));
//! assert_eq!(t.ratio("rec"), Some(1.2));
//! assert!(t.render().contains("| std shell | not available: not on this branch yet |"));
//! ```

/// The median of `samples` (the mean of the two middle values for an even
/// count); `None` when there are none. NaNs sort last.
///
/// ```
/// use flightrec_benches::side_by_side::median;
/// assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
/// assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
/// assert_eq!(median(&[]), None);
/// ```
pub fn median(samples: &[f64]) -> Option<f64> {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(s[n / 2]),
        _ => Some((s[n / 2 - 1] + s[n / 2]) / 2.0),
    }
}

/// What a row holds: samples, or why the subject could not be measured.
#[derive(Clone, Debug, PartialEq)]
pub enum RowResult {
    /// Nanoseconds per call, one sample per batch.
    Measured(Vec<f64>),
    /// The subject is not measured in this run, and why.
    NotAvailable(String),
}

/// One subject of a table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Short key other rows and goals refer to.
    pub key: &'static str,
    /// What the table shows in the first column.
    pub label: String,
    /// Key of the row whose median is subtracted to get the net cost.
    pub baseline: Option<&'static str>,
    /// The samples, or why there are none.
    pub result: RowResult,
}

impl Row {
    /// A measured row.
    pub fn measured(
        key: &'static str,
        label: impl Into<String>,
        baseline: Option<&'static str>,
        samples: Vec<f64>,
    ) -> Self {
        Row {
            key,
            label: label.into(),
            baseline,
            result: RowResult::Measured(samples),
        }
    }

    /// A row shown as not available, with the reason.
    pub fn not_available(
        key: &'static str,
        label: impl Into<String>,
        why: impl Into<String>,
    ) -> Self {
        Row {
            key,
            label: label.into(),
            baseline: None,
            result: RowResult::NotAvailable(why.into()),
        }
    }

    fn samples(&self) -> Option<&[f64]> {
        match &self.result {
            RowResult::Measured(s) if !s.is_empty() => Some(s),
            _ => None,
        }
    }
}

/// A titled list of rows with one reference row for the ratio column.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Heading printed above the table.
    pub title: String,
    /// Key of the row the ratio column divides by.
    pub reference: &'static str,
    /// Short name of the reference row, for the ratio column's heading.
    pub reference_name: &'static str,
    /// The rows, in print order.
    pub rows: Vec<Row>,
}

impl Table {
    /// An empty table whose ratios are relative to the row `reference`, called
    /// `reference_name` in the ratio column's heading.
    pub fn new(
        title: impl Into<String>,
        reference: &'static str,
        reference_name: &'static str,
    ) -> Self {
        Table {
            title: title.into(),
            reference,
            reference_name,
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn push(&mut self, row: Row) {
        self.rows.push(row);
    }

    /// The row with this key.
    pub fn row(&self, key: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.key == key)
    }

    /// Median nanoseconds per call of a measured row.
    pub fn median(&self, key: &str) -> Option<f64> {
        median(self.row(key)?.samples()?)
    }

    /// Smallest sample of a measured row.
    pub fn min(&self, key: &str) -> Option<f64> {
        self.row(key)?
            .samples()?
            .iter()
            .copied()
            .min_by(f64::total_cmp)
    }

    /// Median minus the baseline's median (the median itself without a baseline).
    pub fn net(&self, key: &str) -> Option<f64> {
        let row = self.row(key)?;
        let m = median(row.samples()?)?;
        match row.baseline {
            None => Some(m),
            Some(b) => Some(m - self.median(b)?),
        }
    }

    /// Net cost divided by the reference row's net cost.
    pub fn ratio(&self, key: &str) -> Option<f64> {
        let reference = self.net(self.reference)?;
        if reference <= 0.0 {
            return None;
        }
        Some(self.net(key)? / reference)
    }

    /// The table as Markdown: label, median, minimum, net and ratio per row.
    pub fn render(&self) -> String {
        let mut out = format!(
            "{}\n\n| subject | median ns | min ns | net ns | net / {} |\n|---|---:|---:|---:|---:|\n",
            self.title, self.reference_name
        );
        for row in &self.rows {
            let line = match &row.result {
                RowResult::NotAvailable(why) => {
                    format!("| {} | not available: {} |\n", row.label, why)
                }
                RowResult::Measured(_) => format!(
                    "| {} | {} | {} | {} | {} |\n",
                    row.label,
                    ns(self.median(row.key)),
                    ns(self.min(row.key)),
                    if row.baseline.is_some() {
                        ns(self.net(row.key))
                    } else {
                        "(baseline)".to_owned()
                    },
                    match (row.baseline, self.ratio(row.key)) {
                        (Some(_), Some(r)) => format!("{r:.2}"),
                        _ => "—".to_owned(),
                    }
                ),
            };
            out.push_str(&line);
        }
        out
    }
}

fn ns(v: Option<f64>) -> String {
    match v {
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "—".to_owned(),
    }
}

/// A goal of the form `numerator / denominator` against a bound, evaluated on
/// net costs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Goal {
    /// What the goal says, e.g. "compiler-rt FDR / flightrec core ≥ 4".
    pub text: &'static str,
    /// Row key of the numerator.
    pub numerator: &'static str,
    /// Row key of the denominator.
    pub denominator: &'static str,
    /// The bound the ratio is compared with.
    pub bound: f64,
    /// `true`: the ratio must be at least `bound`; `false`: at most.
    pub at_least: bool,
}

impl Goal {
    /// The ratio of the two rows' net costs.
    pub fn ratio(&self, table: &Table) -> Option<f64> {
        let d = table.net(self.denominator)?;
        if d <= 0.0 {
            return None;
        }
        Some(table.net(self.numerator)? / d)
    }

    /// One line: the goal, the measured ratio, and met / missed / not measured.
    ///
    /// ```
    /// use flightrec_benches::side_by_side::{Goal, Row, Table};
    /// let mut t = Table::new("t", "a", "a");
    /// t.push(Row::measured("a", "a", None, vec![10.0]));
    /// t.push(Row::measured("b", "b", None, vec![50.0]));
    /// let g = Goal { text: "b / a ≥ 4", numerator: "b", denominator: "a", bound: 4.0, at_least: true };
    /// assert_eq!(g.report(&t), "- b / a ≥ 4: 5.00, met");
    /// ```
    pub fn report(&self, table: &Table) -> String {
        match self.ratio(table) {
            None => format!("- {}: not measured in this run", self.text),
            Some(r) => {
                let met = if self.at_least {
                    r >= self.bound
                } else {
                    r <= self.bound
                };
                format!(
                    "- {}: {r:.2}, {}",
                    self.text,
                    if met { "met" } else { "MISSED" }
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        let mut t = Table::new("FDR", "floor", "floor");
        t.push(Row::measured("call", "call only", None, vec![1.0, 3.0]));
        t.push(Row::measured(
            "floor",
            "floor: rdtsc + store",
            Some("call"),
            vec![12.0, 11.0, 14.0],
        ));
        t.push(Row::measured("x", "subject x", Some("call"), vec![32.0]));
        t.push(Row::not_available("y", "subject y", "missing tool"));
        t
    }

    #[test]
    fn net_and_ratio_use_the_baseline_median() {
        let t = table();
        assert_eq!(t.median("call"), Some(2.0));
        assert_eq!(t.net("floor"), Some(10.0));
        assert_eq!(t.net("x"), Some(30.0));
        assert_eq!(t.ratio("x"), Some(3.0));
        assert_eq!(t.ratio("floor"), Some(1.0));
        assert_eq!(t.min("floor"), Some(11.0));
        assert_eq!(t.net("y"), None);
        assert_eq!(t.ratio("missing"), None);
    }

    #[test]
    fn render_has_one_line_per_row_and_marks_unavailable_rows() {
        let out = table().render();
        assert!(out.starts_with("FDR\n\n| subject | median ns | min ns | net ns | net / floor |"));
        assert!(out.contains("| call only | 2.0 | 1.0 | (baseline) | — |\n"));
        assert!(out.contains("| floor: rdtsc + store | 12.0 | 11.0 | 10.0 | 1.00 |\n"));
        assert!(out.contains("| subject x | 32.0 | 32.0 | 30.0 | 3.00 |\n"));
        assert!(out.contains("| subject y | not available: missing tool |\n"));
        assert_eq!(out.lines().count(), 4 + 4);
    }

    #[test]
    fn ratio_needs_a_positive_reference() {
        let mut t = Table::new("t", "r", "r");
        t.push(Row::measured("base", "base", None, vec![5.0]));
        t.push(Row::measured("r", "r", Some("base"), vec![4.0]));
        t.push(Row::measured("x", "x", Some("base"), vec![9.0]));
        assert_eq!(t.net("r"), Some(-1.0));
        assert_eq!(t.ratio("x"), None);
    }

    #[test]
    fn goals_report_met_missed_and_unmeasured() {
        let t = table();
        let at_most = Goal {
            text: "x / floor ≤ 1.3",
            numerator: "x",
            denominator: "floor",
            bound: 1.3,
            at_least: false,
        };
        assert_eq!(at_most.report(&t), "- x / floor ≤ 1.3: 3.00, MISSED");
        let at_least = Goal {
            text: "x / floor ≥ 2",
            at_least: true,
            bound: 2.0,
            ..at_most
        };
        assert_eq!(at_least.report(&t), "- x / floor ≥ 2: 3.00, met");
        let unmeasured = Goal {
            numerator: "y",
            ..at_least
        };
        assert_eq!(
            unmeasured.report(&t),
            "- x / floor ≥ 2: not measured in this run"
        );
    }

    #[test]
    fn median_sorts_and_averages_the_middle() {
        assert_eq!(median(&[5.0]), Some(5.0));
        assert_eq!(median(&[9.0, 1.0, 5.0, 3.0]), Some(4.0));
    }
}
