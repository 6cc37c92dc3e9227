//! Quoting of arguments for the two languages batch files are written in: the POSIX shell
//! (Slurm's sbatch scripts) and HTCondor's submit descriptions (the "new" `arguments = "…"`
//! syntax).

use super::{BatchError, Piece, Word};

/// Characters a shell word may hold without quotes (no globbing, expansion or splitting).
fn shell_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c)
}

/// `s` as one shell word: unchanged when it needs no quotes, else in single quotes (a single
/// quote inside written as `'\''`). Any text, newlines included, comes through unchanged.
#[must_use]
pub fn shell(s: &str) -> String {
    if !s.is_empty() && s.chars().all(shell_safe) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// One word of a job's command line as shell text: literal parts quoted, the job index as
/// `"$var"` (so `job-"$SLURM_ARRAY_TASK_ID"` is one word).
#[must_use]
pub fn shell_word(word: &Word, index_var: &str) -> String {
    let mut out = String::new();
    for p in word {
        match p {
            Piece::Text(t) if t.is_empty() => {}
            Piece::Text(t) => out.push_str(&shell(t)),
            Piece::JobIndex => out.push_str(&format!("\"${index_var}\"")),
        }
    }
    if out.is_empty() {
        out.push_str("''");
    }
    out
}

/// The value of an HTCondor `arguments = "…"` line (new syntax): words separated by spaces, a
/// word with white space or a single quote in single quotes (`''` for a quote inside), double
/// quotes doubled, `$` written as `$(DOLLAR)` so that the submit language does not expand it,
/// and the job index as the macro `index_macro` (e.g. `$(job_index)`).
///
/// HTCondor's argument strings cannot hold a line break: such an argument is an error.
pub fn condor_arguments(words: &[Word], index_macro: &str) -> Result<String, BatchError> {
    let mut out = Vec::new();
    for word in words {
        let mut text = String::new();
        let mut quote = word.is_empty();
        for p in word {
            match p {
                Piece::Text(t) => {
                    if t.contains(['\n', '\r']) {
                        return Err(BatchError::Unrepresentable {
                            arg: t.clone(),
                            what: "an HTCondor argument cannot hold a line break",
                        });
                    }
                    quote |= t.is_empty() || t.contains(|c: char| c.is_whitespace() || c == '\'');
                    text.push_str(&t.replace('$', "$(DOLLAR)").replace('\'', "''").replace('"', "\"\""));
                }
                Piece::JobIndex => text.push_str(index_macro),
            }
        }
        out.push(if quote { format!("'{text}'") } else { text });
    }
    Ok(format!("\"{}\"", out.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Word {
        vec![Piece::Text(s.to_string())]
    }

    /// What `sh` makes of the quoted words: each word once, as it was written.
    fn through_sh(words: &[String]) -> Vec<String> {
        let script = format!("for a in {}; do printf '%s\\0' \"$a\"; done", words.join(" "));
        let out = std::process::Command::new("sh").args(["-c", &script]).output().expect("sh runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let s = String::from_utf8(out.stdout).unwrap();
        s.split_terminator('\0').map(str::to_string).collect()
    }

    #[test]
    fn shell_quoting_survives_the_shell() {
        let hard = [
            "plain",
            "with space",
            "it's",
            "\"double\"",
            "$HOME",
            "`date`",
            "a\nb",
            "*",
            "",
            "'",
            "tab\there",
            "back\\slash",
            "ünïcode ✓",
            "--cut=top:0.1",
            "!x",
            "a;b|c&d",
        ];
        let quoted: Vec<String> = hard.iter().map(|s| shell(s)).collect();
        assert_eq!(through_sh(&quoted), hard);
        // Words that need nothing stay readable.
        assert_eq!(shell("/work/out.jobs/job-0.parquet"), "/work/out.jobs/job-0.parquet");
        assert_eq!(shell("--trials"), "--trials");
        assert_eq!(shell(""), "''");
    }

    #[test]
    fn the_job_index_is_expanded_inside_one_word() {
        let w = vec![Piece::Text("/a dir/job-".into()), Piece::JobIndex, Piece::Text(".parquet".into())];
        let s = shell_word(&w, "IDX");
        assert_eq!(s, "'/a dir/job-'\"$IDX\".parquet");
        let script = format!("IDX=7; printf '%s\\0' {s}");
        let out = std::process::Command::new("sh").args(["-c", &script]).output().unwrap();
        assert_eq!(out.stdout, b"/a dir/job-7.parquet\0");
        assert_eq!(shell_word(&vec![Piece::JobIndex], "I"), "\"$I\"");
    }

    #[test]
    fn condor_arguments_follow_the_new_syntax() {
        let words = [
            text("sky"),
            text("with space"),
            text("it's"),
            text("say \"hi\""),
            text("$HOME"),
            text(""),
            vec![Piece::Text("job-".into()), Piece::JobIndex],
        ];
        assert_eq!(
            condor_arguments(&words, "$(job_index)").unwrap(),
            r#""sky 'with space' 'it''s' 'say ""hi""' $(DOLLAR)HOME '' job-$(job_index)""#
        );
    }

    #[test]
    fn condor_arguments_refuse_line_breaks() {
        let e = condor_arguments(&[text("a\nb")], "$(P)").unwrap_err();
        assert!(e.to_string().contains("line break"), "{e}");
    }
}
