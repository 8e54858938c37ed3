//! The `flightrec tasks` report: a [`Summary`] of an async executor's tasks
//! as text (one line per executor, one row per task, a line per task that
//! blocked its executor) or CSV. Examples on [`Summary`].

use std::fmt::Write as _;
use std::io::{self, Write};

use flightrec_core::tasks::key;

use crate::timeline::tasks::{Summary, TaskSummary};

impl Summary {
    /// The summary as text: one line per executor, one row per task, and one
    /// line per task that blocked its executor longer than `threshold_us`.
    ///
    /// ```
    /// use flightrec_host::timeline::tasks::{ExecutorSummary, Summary, TaskSummary};
    /// let mut s = Summary { frequency: 1_000_000, ..Summary::default() };
    /// let exec = ExecutorSummary {
    ///     passes: 2,
    ///     busy: 2_500,
    ///     span: Some((0, 10_000)),
    ///     id: Some(0x2000_0100),
    ///     name: Some("app::EXECUTOR".into()),
    /// };
    /// s.executors.insert(0x40, exec);
    /// let hog = TaskSummary {
    ///     id: Some(0x2000_0a48),
    ///     executor: Some(0x2000_0100),
    ///     polls: 2,
    ///     longest: 2_000,
    ///     name: Some("app::hog".into()),
    ///     ..TaskSummary::default()
    /// };
    /// s.tasks.insert(0x292, hog);
    /// let mut text = Vec::new();
    /// s.write_text(&mut text, 1_000.0).unwrap();
    /// let text = String::from_utf8(text).unwrap();
    /// let lines: Vec<_> = text.lines().collect();
    /// assert_eq!(lines[0], "executor app::EXECUTOR: 2 passes, busy 2500 us, idle 75.0 %");
    /// assert!(lines[1].starts_with("task     executor      spawns"), "{text}");
    /// assert!(lines[2].starts_with("app::hog app::EXECUTOR"), "{text}");
    /// assert_eq!(lines[3], "blocking: app::hog held its executor for 2000 us in one poll (over 1000 us)");
    /// // Over a higher threshold it blocked nothing.
    /// let mut text = Vec::new();
    /// s.write_text(&mut text, 5_000.0).unwrap();
    /// assert!(!String::from_utf8(text).unwrap().contains("blocking:"));
    /// ```
    pub fn write_text(&self, out: &mut dyn Write, threshold_us: f64) -> io::Result<()> {
        for (&k, e) in &self.executors {
            writeln!(
                out,
                "executor {}: {} passes, busy {:.0} us, idle {:.1} %",
                self.executor_name(k),
                e.passes,
                self.micros(e.busy),
                100.0 * e.idle_share()
            )?;
        }
        let rows: Vec<(String, String, &TaskSummary)> = self
            .tasks
            .iter()
            .map(|(&k, t)| {
                let exec = t.executor.map(|e| self.executor_name(key(e)));
                (self.task_name(k, t), exec.unwrap_or_default(), t)
            })
            .collect();
        let nw = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(4);
        let ew = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max(8);
        writeln!(
            out,
            "{:<nw$} {:<ew$} {:>6} {:>5} {:>7} {:>7} {:>11} {:>11} {:>9} {:>9} {:>9}",
            "task",
            "executor",
            "spawns",
            "ends",
            "polls",
            "wakes",
            "total us",
            "longest us",
            "wake p50",
            "wake p99",
            "wake max"
        )?;
        for (name, exec, t) in &rows {
            writeln!(
                out,
                "{name:<nw$} {exec:<ew$} {:>6} {:>5} {:>7} {:>7} {:>11.1} {:>11.1} {:>9.1} {:>9.1} {:>9.1}",
                t.spawns,
                t.ends,
                t.polls,
                t.wakes,
                self.micros(t.busy),
                self.micros(t.longest),
                self.micros(t.latency.quantile(0.5)),
                self.micros(t.latency.quantile(0.99)),
                self.micros(t.latency.max()),
            )?;
        }
        for (&k, t) in self.blocking(threshold_us) {
            writeln!(
                out,
                "blocking: {} held its executor for {:.0} us in one poll (over {threshold_us} us)",
                self.task_name(k, t),
                self.micros(t.longest)
            )?;
        }
        Ok(())
    }

    /// The summary as CSV, one row per task (times in microseconds), and the
    /// `blocking` column set for the tasks over `threshold_us`.
    ///
    /// ```
    /// use flightrec_host::timeline::tasks::{ExecutorSummary, Summary, TaskSummary};
    /// let mut s = Summary { frequency: 1_000_000, ..Summary::default() };
    /// let exec = ExecutorSummary {
    ///     passes: 2,
    ///     busy: 2_500,
    ///     span: Some((0, 10_000)),
    ///     id: Some(0x2000_0100),
    ///     name: Some("app::EXECUTOR".into()),
    /// };
    /// s.executors.insert(0x40, exec);
    /// let hog = TaskSummary {
    ///     id: Some(0x2000_0a48),
    ///     executor: Some(0x2000_0100),
    ///     polls: 2,
    ///     longest: 2_000,
    ///     name: Some("app::hog".into()),
    ///     ..TaskSummary::default()
    /// };
    /// s.tasks.insert(0x292, hog);
    /// let mut csv = Vec::new();
    /// s.write_csv(&mut csv, 1_000.0).unwrap();
    /// let csv = String::from_utf8(csv).unwrap();
    /// let lines: Vec<_> = csv.lines().collect();
    /// assert!(lines[0].starts_with("task,executor,spawns,"), "{csv}");
    /// assert_eq!(lines[1], "app::hog,app::EXECUTOR,0,0,2,0,0.0,2000.0,0.0,0.0,0.0,1,0.7500");
    /// ```
    pub fn write_csv(&self, out: &mut dyn Write, threshold_us: f64) -> io::Result<()> {
        writeln!(
            out,
            "task,executor,spawns,ends,polls,wakes,total_us,longest_us,wake_p50_us,wake_p99_us,wake_max_us,blocking,executor_idle_share"
        )?;
        for (&k, t) in &self.tasks {
            let exec_key = t.executor.map(key);
            let idle = exec_key
                .and_then(|e| self.executors.get(&e))
                .map_or(String::new(), |e| format!("{:.4}", e.idle_share()));
            let mut row = String::new();
            let _ = write!(
                row,
                "{},{},{},{},{},{},{:.1},{:.1},{:.1},{:.1},{:.1},{},{}",
                self.task_name(k, t),
                exec_key.map(|e| self.executor_name(e)).unwrap_or_default(),
                t.spawns,
                t.ends,
                t.polls,
                t.wakes,
                self.micros(t.busy),
                self.micros(t.longest),
                self.micros(t.latency.quantile(0.5)),
                self.micros(t.latency.quantile(0.99)),
                self.micros(t.latency.max()),
                u8::from(self.micros(t.longest) > threshold_us),
                idle
            );
            writeln!(out, "{row}")?;
        }
        Ok(())
    }
}
