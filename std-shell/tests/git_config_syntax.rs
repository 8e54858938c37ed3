//! The git config reader against git itself: for each text, the entries (key,
//! value or none, in order) equal `git config --file F --list -z`, and a bad
//! text fails on the line git names in "bad config line N".
#![cfg(feature = "git-config")]

use std::path::Path;
use std::process::Command;

use flightrec::trace2::config::{ConfigError, ConfigFiles};

/// Texts whose every entry git reads; each covers a corner of the grammar.
const GOOD: &[&str] = &[
    "[a]\n\tb = c\n",
    "[A]\n\tB = C\n",
    "[a \"Sub Section\"]\n\tk = v\n",
    "[a \"q\\\"uote\\\\back\\x\"]\n\tk = v\n",
    "[a.B.c]\n\tk = v\n",
    "[a]k=v\n[b] k2 = w ; comment\n",
    "# only a comment\n; another\n",
    "[a]\n\tflag\n\tflag2 \n\tempty =\n\tspaced =   \n",
    "[a]\n\tv = \"  quoted  \"  \n",
    "[a]\n\tv = one  two\t\tthree   \n",
    "[a]\n\tv = tab\\there\\nnew\\bback \\\\ \\\"\n",
    "[a]\n\tv = con\\\n tinued\\\n\tagain\n",
    "[a]\n\tv = \"half ; not comment\" ; comment\n",
    "[a]\n\tv = x # comment \"quote\n",
    "[a]\r\n\tv = crlf\r\n\tw = two\r\n",
    "[a]\n\tv = lone\rcr\n",
    "\u{feff}[bom]\n\tk = v\n",
    "[a]\n\tkey-with-dash = 1\n\tKey2 = 2\n",
    "[a]\n\tv = at end without newline",
    "[a]\n\tflag-at-end",
    "[a]\n\tv = \"a\"\"b\"\n",
    "[a]   \n  [b]\n\tk=1\n",
    "[a]\n\tv=\\\n",
    "[a \"\"]\n\tk = empty subsection\n",
];

/// Texts git rejects: entries before the bad line are still read.
const BAD: &[&str] = &[
    "[a]\nx = 1\n[b\ny = 2\n",
    "[a]\n\tv = \"unclosed\n\tw = 1\n",
    "[a]\n\tv = bad \\q escape\n",
    "[a]\n\t1key = v\n",
    "[a]\n\tkey value\n",
    "[a b]\n\tk = v\n",
    "[a \"sub\"x]\n\tk = v\n",
    "[a \"sub\n\"]\n",
    "[]\n\tk = v\n",
    "[a!]\n",
    "[a]\n\tk = v\n[b",
    "[a]\n\tv = \"unclosed at end",
    "[a]\n\tk_underscore = 1\n",
    "\u{ef}[a]\n",
];

fn git_available() -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok && std::env::var("CI").as_deref() == Ok("true") {
        panic!("git is not installed; CI must compare with it");
    }
    ok
}

/// git's reading: `Ok(entries)` or `Err(bad line)`.
fn git_read(file: &Path) -> Result<Vec<(String, Option<String>)>, usize> {
    let out = Command::new("git")
        .args(["config", "--file"])
        .arg(file)
        .args(["--list", "-z"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let at = err
            .find("bad config line ")
            .unwrap_or_else(|| panic!("{err}"));
        let n: String = err[at + 16..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        return Err(n.parse().unwrap());
    }
    Ok(out
        .stdout
        .split(|&b| b == 0)
        .filter(|e| !e.is_empty())
        .map(|e| {
            let e = String::from_utf8_lossy(e);
            match e.split_once('\n') {
                Some((k, v)) => (k.to_string(), Some(v.to_string())),
                None => (e.to_string(), None),
            }
        })
        .collect())
}

fn ours(file: &Path) -> Result<Vec<(String, Option<String>)>, usize> {
    let files = ConfigFiles {
        global: vec![file.to_path_buf()],
        ..ConfigFiles::none()
    };
    match files.entries(None) {
        Ok(all) => Ok(all
            .iter()
            .map(|e| {
                (
                    e.key_str().into_owned(),
                    e.value
                        .as_ref()
                        .map(|v| String::from_utf8_lossy(v).into_owned()),
                )
            })
            .collect()),
        Err(ConfigError::BadLine { line, .. }) => Err(line),
        Err(e) => panic!("{e}"),
    }
}

fn compare(texts: &[&str], want_ok: bool) {
    let dir = tempfile::tempdir().unwrap();
    for (i, text) in texts.iter().enumerate() {
        let file = dir.path().join(format!("config{i}"));
        std::fs::write(&file, text.as_bytes()).unwrap();
        let theirs = git_read(&file);
        assert_eq!(theirs.is_ok(), want_ok, "git on {text:?}: {theirs:?}");
        assert_eq!(ours(&file), theirs, "text {text:?}");
    }
}

#[test]
fn entries_equal_gits() {
    if git_available() {
        compare(GOOD, true);
    }
}

#[test]
fn bad_lines_equal_gits() {
    if git_available() {
        compare(BAD, false);
    }
}
