//! Trace2 settings from the environment and git config files, against git
//! 2.47.3's captured behaviour (`testdata/trace2/config/`) and, where git is
//! installed, against git itself run on the same files (under `CI=true` a
//! missing git fails these tests).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use flightrec::core::trace2::Target;
use flightrec::trace2::config::{def_param_entries, ConfigError, ConfigFiles, Scope, Trace2Config};
use flightrec::trace2::target::{Destination, OpenOutcome};

const SID: &str = "20231114T221320.123456Z-H65cb7838-P00001234";

fn data(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/trace2/config")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

fn det(scenario: &str, name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/trace2/det")
        .join(scenario)
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

/// A scratch directory standing for the captures' `/scratch`, with `home/`
/// as `$HOME`, and an environment of its own.
struct Sandbox {
    root: tempfile::TempDir,
    env: HashMap<String, OsString>,
}

impl Sandbox {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("home")).unwrap();
        let mut env = HashMap::new();
        env.insert(
            "HOME".to_string(),
            root.path().join("home").into_os_string(),
        );
        env.insert("GIT_CONFIG_NOSYSTEM".to_string(), "1".into());
        Sandbox { root, env }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    fn scratch(&self) -> String {
        self.root.path().to_str().unwrap().to_string()
    }

    /// Writes `text` to `rel`, with the captures' `/scratch` made ours.
    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text.replace("/scratch", &self.scratch())).unwrap();
        p
    }

    fn set(&mut self, name: &str, value: impl Into<OsString>) -> &mut Self {
        self.env.insert(name.to_string(), value.into());
        self
    }

    fn unset(&mut self, name: &str) -> &mut Self {
        self.env.remove(name);
        self
    }

    fn lookup(&self) -> impl Fn(&str) -> Option<OsString> + '_ {
        |name| self.env.get(name).cloned()
    }

    fn try_load(&self) -> Result<Trace2Config, ConfigError> {
        Trace2Config::try_load_from("GIT_TRACE2", self.lookup())
    }

    fn load(&self) -> Trace2Config {
        self.try_load().unwrap()
    }

    fn files(&self) -> ConfigFiles {
        ConfigFiles::from_env(self.lookup())
    }
}

fn os(s: &str) -> Option<OsString> {
    Some(OsString::from(s))
}

/// The `printf '%q '` words of a captured `*.env.txt` as `NAME=VALUE` pairs
/// (the config captures hold only plain words and empty values).
fn env_pairs(text: &str) -> Vec<(String, String)> {
    text.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn global_targets_from_the_gitconfig() {
    let mut sb = Sandbox::new();
    sb.write("home/.gitconfig", &data("global-targets.gitconfig.txt"));
    for (k, v) in env_pairs(&data("global-targets.env.txt")) {
        sb.set(&k, v);
    }
    let cfg = sb.load();
    let s = sb.scratch();
    assert_eq!(cfg.normal.value, os(&format!("{s}/cfg-normal.txt")));
    assert_eq!(cfg.perf.value, os(&format!("{s}/cfg-perf.txt")));
    assert_eq!(cfg.event.value, os(&format!("{s}/cfg-event.txt")));
    // normalBrief = true, perfBrief = 1, eventBrief = yes
    assert!(cfg.normal.brief && cfg.perf.brief && cfg.event.brief);
    assert_eq!(cfg.config_params, ["foo.*", "core.abbrev"]);
    assert_eq!(cfg.env_vars, ["MY_ENV_A"]);
    // git wrote all three files.
    for (kind, name) in [
        (Target::Normal, "cfg-normal.txt"),
        (Target::Perf, "cfg-perf.txt"),
        (Target::Event, "cfg-event.txt"),
    ] {
        let d = Destination::open(kind, &cfg, SID).unwrap();
        assert_eq!(d.path(), Some(sb.path(name).as_path()));
        assert!(sb.path(name).exists());
    }

    // The def_params git reported: the global entry, then the repository's
    // (git ran inside the captured repository, whose config we recreate).
    let git_dir = sb.write("repo/.git/config", LOCAL_CONFIG);
    let entries = sb.files().entries(git_dir.parent()).unwrap();
    let got: Vec<String> = def_param_entries(&entries, &cfg.config_params)
        .map(def_param_line)
        .collect();
    let want: Vec<String> = data("global-targets.normal.txt")
        .lines()
        .filter(|l| l.starts_with("def_param ") && !l.contains("scope:command"))
        .map(str::to_string)
        .collect();
    assert_eq!(got, want);
}

/// The repository config of the captures: a clone, then `git config
/// core.abbrev 12` and `git config foo.local "local value"`.
const LOCAL_CONFIG: &str = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\
\tbare = false\n\tlogallrefupdates = true\n\tabbrev = 12\n[remote \"origin\"]\n\
\turl = /scratch/bare.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n[foo]\n\tlocal = local value\n";

/// A config `def_param` line as the normal target writes it (brief).
fn def_param_line(e: &flightrec::trace2::config::ConfigEntry) -> String {
    match &e.value {
        Some(v) => format!(
            "def_param scope:{} {}={}",
            e.scope.as_str(),
            e.key_str(),
            String::from_utf8_lossy(v)
        ),
        None => format!("def_param scope:{} {}", e.scope.as_str(), e.key_str()),
    }
}

#[test]
fn config_params_of_the_det_capture() {
    // GIT_TRACE2_CONFIG_PARAMS='core.*,foo.*' in the captured repository.
    let mut sb = Sandbox::new();
    sb.write("home/.gitconfig", "[foo]\n\tglobal = global value\n");
    sb.set("GIT_TRACE2_CONFIG_PARAMS", "core.*,foo.*");
    let cfg = sb.load();
    let git_dir = sb.write("repo/.git/config", LOCAL_CONFIG);
    let entries = sb.files().entries(git_dir.parent()).unwrap();
    let got: Vec<String> = def_param_entries(&entries, &cfg.config_params)
        .map(def_param_line)
        .collect();
    let want: Vec<String> = det("config-params", "normal-brief.txt")
        .lines()
        .filter(|l| l.starts_with("def_param ") && !l.contains("scope:command"))
        .map(str::to_string)
        .collect();
    assert_eq!(want.len(), 7);
    assert_eq!(got, want);
}

#[test]
fn empty_env_does_not_override_config() {
    let mut sb = Sandbox::new();
    sb.write(
        "home/.gitconfig",
        &data("env-empty-does-not-override.gitconfig.txt"),
    );
    assert_eq!(
        env_pairs(&data("env-empty-does-not-override.env.txt")),
        [("GIT_TRACE2_EVENT".to_string(), String::new())]
    );
    sb.set("GIT_TRACE2_EVENT", "");
    let cfg = sb.load();
    assert_eq!(
        cfg.event.value,
        os(&format!("{}/cfg-event.txt", sb.scratch()))
    );
    assert!(cfg.event.brief);
    let d = Destination::open(Target::Event, &cfg, SID).unwrap();
    // git traced into the file; its first line is the brief version event.
    let captured = data("env-empty-does-not-override.event.txt");
    let first = captured.lines().next().unwrap();
    assert!(first.starts_with("{\"event\":\"version\""));
    assert_eq!(d.write_line(format!("{first}\n").as_bytes()), None);
    assert_eq!(
        std::fs::read_to_string(sb.path("cfg-event.txt")).unwrap(),
        format!("{first}\n")
    );
}

#[test]
fn non_empty_env_overrides_config() {
    let mut sb = Sandbox::new();
    sb.write(
        "home/.gitconfig",
        &data("env-overrides-config.gitconfig.txt"),
    );
    sb.set("GIT_TRACE2_EVENT", "0");
    let cfg = sb.load();
    assert_eq!(cfg.event.value, os("0"));
    assert_eq!(
        Destination::open(Target::Event, &cfg, SID).unwrap_err(),
        OpenOutcome::Off
    );
    assert_eq!(data("env-overrides-config.stderr.txt"), "");
    assert!(!sb.path("cfg-event.txt").exists());
}

#[test]
fn valueless_key_is_gits_fatal_error() {
    let sb = Sandbox::new();
    sb.write("home/.gitconfig", &data("valueless-key.gitconfig.txt"));
    let err = sb.try_load().unwrap_err();
    let want = data("valueless-key.stderr.txt")
        .replace("/scratch/home", sb.path("home").to_str().unwrap());
    let got: String = err
        .git_messages()
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(got, want);
    assert_eq!(data("valueless-key.rc.txt"), "128\n");
    // flightrec does not exit: load() prints the messages and disables Trace2.
    let cfg = Trace2Config::load_from("GIT_TRACE2", sb.lookup());
    assert!(!cfg.any_target());
}

#[test]
fn local_config_and_command_line_are_ignored() {
    // git ignores repo-local trace2.* and `-c trace2.*`
    // (local-and-cmdline-ignored.txt); the loader never looks at either,
    // even with GIT_DIR and GIT_CONFIG_PARAMETERS set.
    assert_eq!(
        data("local-and-cmdline-ignored.txt"),
        "local config target ignored\n-c target ignored\n"
    );
    let mut sb = Sandbox::new();
    let local = sb.write(
        "repo/.git/config",
        "[trace2]\n\teventTarget = /scratch/cfg-local.txt\n",
    );
    sb.set("GIT_DIR", local.parent().unwrap());
    sb.set(
        "GIT_CONFIG_PARAMETERS",
        "'trace2.perfTarget'='/tmp/cfg-cmdline.txt'",
    );
    sb.set("GIT_CONFIG_COUNT", "1");
    sb.set("GIT_CONFIG_KEY_0", "trace2.normalTarget");
    sb.set("GIT_CONFIG_VALUE_0", "/tmp/x");
    assert!(!sb.load().any_target());
}

#[test]
fn files_are_read_in_gits_order_last_value_wins() {
    let mut sb = Sandbox::new();
    let system = sb.write(
        "etc/gitconfig",
        "[trace2]\n\tnormalTarget = /sys\n\tperfTarget = /sys\n\tmaxFiles = 7\n",
    );
    sb.write(
        "home/.config/git/config",
        "[trace2]\n\tnormalTarget = /xdg\n\tperfTarget = /xdg\n",
    );
    sb.write("home/.gitconfig", "[TRACE2]\n\tNORMALTARGET = /home\n");
    sb.unset("GIT_CONFIG_NOSYSTEM")
        .set("GIT_CONFIG_SYSTEM", &system);
    let cfg = sb.load();
    assert_eq!(cfg.normal.value, os("/home"));
    assert_eq!(cfg.perf.value, os("/xdg"));
    assert_eq!(cfg.max_files, 7);

    // GIT_CONFIG_NOSYSTEM (a git boolean) drops the system file.
    sb.set("GIT_CONFIG_NOSYSTEM", "yes");
    assert_eq!(sb.load().max_files, 0);
    sb.set("GIT_CONFIG_NOSYSTEM", "0");
    assert_eq!(sb.load().max_files, 7);

    // XDG_CONFIG_HOME moves the XDG file.
    sb.write("xdg/git/config", "[trace2]\n\tperfTarget = /xdg2\n");
    sb.set("XDG_CONFIG_HOME", sb.path("xdg"));
    assert_eq!(sb.load().perf.value, os("/xdg2"));

    // GIT_CONFIG_GLOBAL replaces both global files.
    let g = sb.write("other.cfg", "[trace2]\n\teventTarget = /g\n");
    sb.set("GIT_CONFIG_GLOBAL", &g);
    let cfg = sb.load();
    assert_eq!(cfg.normal.value, os("/sys"));
    assert_eq!(cfg.perf.value, os("/sys"));
    assert_eq!(cfg.event.value, os("/g"));
}

#[test]
fn empty_config_value_unsets_and_env_wins() {
    let mut sb = Sandbox::new();
    sb.write(
        "home/.config/git/config",
        "[trace2]\n\tnormalTarget = /xdg\n\teventNesting = 5\n",
    );
    sb.write(
        "home/.gitconfig",
        "[trace2]\n\tnormalTarget =\n\tdestinationDebug = true\n\tmaxFiles = -3\n\
         \tconfigParams = \" a.* , b \",,c\n\tenvVars = X, Y\n\tnormalBrief = junk\n",
    );
    let cfg = sb.load();
    assert_eq!(cfg.normal.value, None);
    assert!(!cfg.normal.brief); // unparsable: ignored
    assert!(!cfg.dst_debug); // atoi("true") = 0
    assert_eq!(cfg.max_files, 0); // negative: no limit
    assert_eq!(cfg.event_nesting, 5);
    assert_eq!(cfg.config_params, ["a.*", "b", "c"]);
    assert_eq!(cfg.env_vars, ["X", "Y"]);
    sb.set("GIT_TRACE2", "/env")
        .set("GIT_TRACE2_EVENT_NESTING", "0")
        .set("GIT_TRACE2_DST_DEBUG", "1")
        .set("GIT_TRACE2_BRIEF", "on");
    let cfg = sb.load();
    assert_eq!(cfg.normal.value, os("/env"));
    assert!(cfg.normal.brief);
    assert!(cfg.dst_debug);
    // An env value that is not > 0 falls back to the default, not to config.
    assert_eq!(cfg.event_nesting, 2);
}

#[test]
fn environment_only_variables() {
    let mut sb = Sandbox::new();
    sb.write(
        "home/.gitconfig",
        "[trace2]\n\tredact = false\n\tparentSid = x\n",
    );
    let cfg = sb.load();
    assert!(cfg.redact);
    assert_eq!(cfg.parent_sid, None);
    sb.set("GIT_TRACE2_REDACT", "")
        .set("GIT_TRACE2_PARENT_SID", "a/b")
        .set("GIT_TRACE2_PARENT_NAME", "p");
    let cfg = sb.load();
    assert!(!cfg.redact, "an empty REDACT parses as false");
    assert_eq!(cfg.parent_sid, os("a/b"));
    assert_eq!(cfg.parent_name, os("p"));
}

#[test]
fn includes_are_read_where_they_stand() {
    let sb = Sandbox::new();
    sb.write(
        "home/inc/rel.cfg",
        "[trace2]\n\tperfTarget = /from-rel\n\tnormalTarget = /from-rel\n",
    );
    sb.write(
        "home/tilde.cfg",
        "[trace2]\n\teventTarget = /from-tilde\n[include]\n\tpath = deeper.cfg\n",
    );
    sb.write("home/deeper.cfg", "[trace2]\n\tmaxFiles = 9\n");
    let abs = sb.write("abs/a.cfg", "[trace2]\n\teventNesting = 4\n");
    sb.write(
        "home/.gitconfig",
        &format!(
            "[trace2]\n\tnormalTarget = /before\n[include]\n\tpath = inc/rel.cfg\n\
             \tpath = ~/tilde.cfg\n\tpath = {}\n\tpath = missing.cfg\n[trace2]\n\tperfTarget = /after\n",
            abs.display()
        ),
    );
    let cfg = sb.load();
    assert_eq!(cfg.normal.value, os("/from-rel"), "included after /before");
    assert_eq!(cfg.perf.value, os("/after"), "set again after the include");
    assert_eq!(cfg.event.value, os("/from-tilde"));
    assert_eq!(cfg.max_files, 9, "nested include, relative to its includer");
    assert_eq!(cfg.event_nesting, 4);

    // The entry order seen by def_param: the include.path entries themselves,
    // each followed by what it includes.
    let entries = sb.files().entries(None).unwrap();
    let keys: Vec<String> = entries.iter().map(|e| e.key_str().into_owned()).collect();
    assert_eq!(
        keys,
        [
            "trace2.normaltarget",
            "include.path",
            "trace2.perftarget",
            "trace2.normaltarget",
            "include.path",
            "trace2.eventtarget",
            "include.path",
            "trace2.maxfiles",
            "include.path",
            "trace2.eventnesting",
            "include.path",
            "trace2.perftarget",
        ]
    );
    assert!(entries.iter().all(|e| e.scope == Scope::Global));
    assert_eq!(entries[3].path, sb.path("home/inc/rel.cfg"));
    assert_eq!(entries[3].line, 3);
}

#[test]
fn include_errors() {
    let sb = Sandbox::new();
    // A valueless include.path is git's "missing value" error.
    sb.write("home/.gitconfig", "[include]\n\n\tpath\n");
    assert_eq!(
        sb.try_load().unwrap_err().git_messages(),
        [
            "error: missing value for 'include.path'".to_string(),
            format!(
                "fatal: bad config line 3 in file {}/home/.gitconfig",
                sb.scratch()
            ),
        ]
    );
    // A valueless trace2 key in an included file names that file.
    sb.write("home/.gitconfig", "[include]\n\tpath = sub/x.cfg\n");
    sb.write("home/sub/x.cfg", "[trace2]\n\tmaxFiles = 1\n\tmaxFiles\n");
    assert_eq!(
        sb.try_load().unwrap_err().git_messages(),
        [
            "error: missing value for 'trace2.maxfiles'".to_string(),
            format!(
                "fatal: bad config line 3 in file {}/home/sub/x.cfg",
                sb.scratch()
            ),
        ]
    );
    // A file that includes itself stops at git's depth limit.
    sb.write("home/.gitconfig", "[include]\n\tpath = .gitconfig\n");
    let e = sb.try_load().unwrap_err();
    assert!(matches!(e, ConfigError::IncludeDepth { .. }), "{e:?}");
    // A valueless key of another section is not an error here.
    sb.write(
        "home/.gitconfig",
        "[foo]\n\tbar\n[trace2]\n\tperfTarget = 1\n",
    );
    assert_eq!(sb.load().perf.value, os("1"));
}

#[test]
fn custom_prefix_reads_its_own_variables_and_no_git_keys() {
    let mut sb = Sandbox::new();
    sb.write(
        "home/.gitconfig",
        "[trace2]\n\tnormalTarget = /git\n[myapp]\n\tperfTarget = /app\n",
    );
    sb.set("MYAPP_TRACE2_EVENT", "/env-event")
        .set("GIT_TRACE2_PERF", "/git-env");
    let cfg = Trace2Config::try_load_from("MYAPP_TRACE2", sb.lookup()).unwrap();
    assert_eq!(cfg.prefix, "MYAPP_TRACE2");
    assert_eq!(cfg.normal.value, None);
    assert_eq!(cfg.perf.value, None);
    assert_eq!(cfg.event.value, os("/env-event"));
    assert_eq!(cfg.var_name(Target::Event), "MYAPP_TRACE2_EVENT");
    let cfg =
        Trace2Config::load_with("MYAPP_TRACE2", Some("myapp"), sb.lookup(), &sb.files()).unwrap();
    assert_eq!(cfg.perf.value, os("/app"));
    // A valueless key of the program's own section is an error like git's.
    sb.write("home/.gitconfig", "[myapp]\n\teventTarget\n");
    assert!(
        Trace2Config::load_with("MYAPP_TRACE2", Some("myapp"), sb.lookup(), &sb.files()).is_err()
    );
    assert!(Trace2Config::try_load_from("MYAPP_TRACE2", sb.lookup()).is_ok());
}

#[test]
fn worktree_config_with_the_extension() {
    let sb = Sandbox::new();
    let common = sb.write(
        "repo/.git/config",
        "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n",
    );
    sb.write("repo/.git/worktrees/wt/commondir", "../..\n");
    sb.write(
        "repo/.git/worktrees/wt/config.worktree",
        "[foo]\n\twt = 1\n",
    );
    let wt_git_dir = sb.path("repo/.git/worktrees/wt");
    let entries = ConfigFiles::none().entries(Some(&wt_git_dir)).unwrap();
    let got: Vec<(Scope, String)> = entries
        .iter()
        .map(|e| (e.scope, e.key_str().into_owned()))
        .collect();
    assert_eq!(
        got,
        [
            (Scope::Local, "core.repositoryformatversion".to_string()),
            (Scope::Local, "extensions.worktreeconfig".to_string()),
            (Scope::Worktree, "foo.wt".to_string()),
        ]
    );
    // Without the extension, config.worktree is not read.
    std::fs::write(&common, "[core]\n\tbare = false\n").unwrap();
    let entries = ConfigFiles::none().entries(Some(&wt_git_dir)).unwrap();
    assert_eq!(entries.len(), 1);
}

// ---------------------------------------------------------------------------
// git itself as the judge.

/// git, or `None` when it is missing and this is not CI.
fn git() -> Option<&'static str> {
    let found = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "git is required under CI");
        eprintln!("git not found: comparisons with git skipped");
        return None;
    }
    Some("git")
}

/// Runs `git args` in `cwd` with only the sandbox's environment (plus PATH).
fn run_git(
    sb: &Sandbox,
    cwd: &Path,
    args: &[&str],
    extra: &[(&str, &str)],
) -> std::process::Output {
    Command::new(git().unwrap())
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LC_ALL", "C")
        .envs(&sb.env)
        .envs(extra.iter().copied())
        .output()
        .unwrap()
}

/// git's config def_param lines for `patterns`, from the normal target of
/// `git <args>`.
fn git_def_params(sb: &Sandbox, cwd: &Path, args: &[&str], patterns: &str) -> Vec<String> {
    let out_file = sb.path("git-normal.txt");
    let _ = std::fs::remove_file(&out_file);
    let out = run_git(
        sb,
        cwd,
        args,
        &[
            ("GIT_TRACE2", out_file.to_str().unwrap()),
            ("GIT_TRACE2_BRIEF", "1"),
            ("GIT_TRACE2_CONFIG_PARAMS", patterns),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(&out_file)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("def_param "))
        .map(str::to_string)
        .collect()
}

#[test]
fn def_param_entries_match_git() {
    if git().is_none() {
        return;
    }
    let mut sb = Sandbox::new();
    let system = sb.write(
        "etc/gitconfig",
        "[Sys \"Sub.Case\"]\n\tKey = \"quoted ; value\" # comment\n[sys.Old]\n\tk = 1\n",
    );
    sb.unset("GIT_CONFIG_NOSYSTEM")
        .set("GIT_CONFIG_SYSTEM", &system);
    sb.write(
        "home/.config/git/config",
        "[xdg]\n\tfirst = 1\n\tcont = a\\\n  b\n",
    );
    sb.write("home/inc.cfg", "[inc]\n\tv = included\n");
    sb.write(
        "home/.gitconfig",
        "[glob]\n\tv = before\n[include]\n\tpath = inc.cfg\n[glob]\n\tv = after\n\
         \tesc = \"tab\\there\"\n\tempty =\n",
    );
    let repo = sb.path("repo");
    let init = run_git(
        &sb,
        sb.root.path(),
        &["init", "-q", repo.to_str().unwrap()],
        &[],
    );
    assert!(init.status.success());
    let git_dir = sb.write("repo/.git/config", LOCAL_CONFIG);
    let outside = sb.path("outside");
    std::fs::create_dir(&outside).unwrap();
    for patterns in ["*", "sys.*,GLOB.*", "*.v", "x*,*.sub.case.*", "[gx]*.*t"] {
        let list: Vec<String> = patterns.split(',').map(str::to_string).collect();
        // Outside a repository: system and global only.
        let want = git_def_params(&sb, &outside, &["version"], patterns);
        let all = sb.files().entries(None).unwrap();
        let got: Vec<String> = def_param_entries(&all, &list).map(def_param_line).collect();
        assert_eq!(got, want, "patterns {patterns}");
        // Inside the repository: its local config follows.
        // (`rev-parse` reads the repository's config; `version` does not.)
        let want = git_def_params(&sb, &repo, &["rev-parse", "--git-dir"], patterns);
        let all = sb.files().entries(git_dir.parent()).unwrap();
        let got: Vec<String> = def_param_entries(&all, &list).map(def_param_line).collect();
        assert_eq!(got, want, "patterns {patterns} in the repository");
    }
}

#[test]
fn config_errors_match_git() {
    if git().is_none() {
        return;
    }
    let sb = Sandbox::new();
    let cases: &[(&str, &str)] = &[
        ("[trace2]\n\teventTarget\n", ""),
        (
            "# c\n\n[trace2]\n\tnormalTarget = /dev/null\n\n\tperfBrief\n",
            "",
        ),
        (
            "[include]\n\tpath = inc.cfg\n",
            "[a]\n\tb = 1\n[trace2]\n\tmaxfiles\n",
        ),
        ("[include]\n\tpath\n", ""),
        ("[trace2]\n\tconfigParams = x\n[broken\n", ""),
        ("[a]\n\tb = \"unterminated\n", ""),
    ];
    for (gitconfig, inc) in cases {
        sb.write("home/.gitconfig", gitconfig);
        sb.write("home/inc.cfg", inc);
        let out = run_git(&sb, sb.root.path(), &["version"], &[]);
        assert_eq!(out.status.code(), Some(128), "{gitconfig:?}");
        let want = String::from_utf8_lossy(&out.stderr).into_owned();
        let got: String = sb
            .try_load()
            .unwrap_err()
            .git_messages()
            .iter()
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(got, want, "{gitconfig:?}");
    }
}

#[test]
fn settings_match_git() {
    if git().is_none() {
        return;
    }
    // git writes its normal target where the files say; so must we.
    let mut sb = Sandbox::new();
    let system = sb.write(
        "etc/gitconfig",
        "[trace2]\n\tnormalTarget = /scratch/sys.txt\n",
    );
    sb.unset("GIT_CONFIG_NOSYSTEM")
        .set("GIT_CONFIG_SYSTEM", &system);
    let scenarios: &[(&str, &str, &str)] = &[
        ("", "", "sys.txt"),
        (
            "[trace2]\n\tnormalTarget = /scratch/xdg.txt\n",
            "",
            "xdg.txt",
        ),
        (
            "[trace2]\n\tnormalTarget = /scratch/xdg.txt\n",
            "[trace2]\n\tnormalTarget = /scratch/home.txt\n",
            "home.txt",
        ),
        (
            "",
            "[include]\n\tpath = ~/inc.cfg\n[trace2]\n\tnormalbrief = 1\n",
            "inc.txt",
        ),
    ];
    sb.write(
        "home/inc.cfg",
        "[trace2]\n\tnormalTarget = /scratch/inc.txt\n",
    );
    for (xdg, home, want_file) in scenarios {
        sb.write("home/.config/git/config", xdg);
        sb.write("home/.gitconfig", home);
        for f in ["sys.txt", "xdg.txt", "home.txt", "inc.txt"] {
            let _ = std::fs::remove_file(sb.path(f));
        }
        let out = run_git(&sb, sb.root.path(), &["version"], &[]);
        assert!(out.status.success());
        let written: Vec<&str> = ["sys.txt", "xdg.txt", "home.txt", "inc.txt"]
            .into_iter()
            .filter(|f| sb.path(f).exists())
            .collect();
        assert_eq!(written, [*want_file], "git");
        let cfg = sb.load();
        assert_eq!(cfg.normal.value, Some(sb.path(want_file).into_os_string()));
    }
}

/// `GIT_TRACE2_REDACT` that is no boolean: git dies with one fatal line once a
/// target is on, and ignores it when every target is off or unusable. The
/// settings give the same error (flightrec prints it and runs without Trace2).
#[test]
fn bad_redact_value_matches_git() {
    if git().is_none() {
        return;
    }
    let mut sb = Sandbox::new();
    let target = sb.path("normal.txt");
    let target = target.to_str().unwrap();
    // (GIT_TRACE2_REDACT, the target variable, its value, redaction when git runs)
    let cases: &[(&str, &str, &str, Option<bool>)] = &[
        ("xyz", "GIT_TRACE2", target, None),
        ("xyz", "GIT_TRACE2_PERF", "2", None),
        ("maybe", "GIT_TRACE2_EVENT", target, None),
        ("xyz", "GIT_TRACE2", "0", Some(true)),
        ("xyz", "GIT_TRACE2", "relative/path", Some(true)),
        ("xyz", "GIT_TRACE2_PERF", "false", Some(true)),
        ("", "GIT_TRACE2", target, Some(false)),
        ("on", "GIT_TRACE2", target, Some(true)),
        ("0x10", "GIT_TRACE2", target, Some(true)),
        ("0", "GIT_TRACE2", target, Some(false)),
    ];
    for &(redact, var, value, want) in cases {
        let case = format!("GIT_TRACE2_REDACT={redact:?} {var}={value}");
        for v in ["GIT_TRACE2", "GIT_TRACE2_PERF", "GIT_TRACE2_EVENT"] {
            sb.unset(v);
        }
        sb.set("GIT_TRACE2_REDACT", redact).set(var, value);
        let out = run_git(&sb, sb.root.path(), &["version"], &[]);
        let _ = std::fs::remove_file(target);
        let git_fatal: Vec<String> = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.starts_with("fatal: "))
            .map(str::to_string)
            .collect();
        match want {
            None => {
                assert_eq!(out.status.code(), Some(128), "{case}: git did not die");
                let e = sb.try_load().unwrap_err();
                assert_eq!(e.git_messages(), git_fatal, "{case}");
                assert_eq!(
                    e,
                    ConfigError::BadEnvBool {
                        name: "GIT_TRACE2_REDACT".into(),
                        value: redact.into()
                    }
                );
            }
            Some(on) => {
                assert!(out.status.success(), "{case}: git failed");
                assert_eq!(sb.try_load().unwrap().redact, on, "{case}");
            }
        }
    }
}

/// `GIT_TRACE2_CONFIG_PARAMS` is split at commas and each pattern trimmed as
/// git's `strbuf_trim` does (space, TAB, LF, CR; not VT or FF): the def_param
/// lines match git's for patterns with every kind of blank around them.
#[test]
fn config_params_are_trimmed_like_git() {
    if git().is_none() {
        return;
    }
    let mut sb = Sandbox::new();
    sb.write(
        "home/.gitconfig",
        "[core]\n\tabbrev = 12\n[a]\n\tb = 1\n\tc = 2\n",
    );
    let outside = sb.path("outside");
    std::fs::create_dir(&outside).unwrap();
    for patterns in [
        " core.abbrev ,\ta.b\n",
        "core.abbrev\x0c,a.c",
        "\x0ba.b,a.c\r",
        "core.*\x0b, ,a.*",
    ] {
        let want = git_def_params(&sb, &outside, &["version"], patterns);
        sb.set("GIT_TRACE2_CONFIG_PARAMS", patterns);
        let cfg = sb.load();
        let all = sb.files().entries(None).unwrap();
        let got: Vec<String> = def_param_entries(&all, &cfg.config_params)
            .map(def_param_line)
            .collect();
        assert_eq!(got, want, "patterns {patterns:?}");
    }
    // Not a vacuous comparison: the first patterns list two entries.
    sb.set("GIT_TRACE2_CONFIG_PARAMS", " core.abbrev ,\ta.b\n");
    assert_eq!(sb.load().config_params, ["core.abbrev", "a.b"]);
}
