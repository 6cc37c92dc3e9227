//! `warpdrive submit slurm|htcondor -- <command> --jobs N -o OUT`: arguments translated into
//! `warpdrive_core::batch` calls (which take the command apart, check it, write the files and
//! submit them); what was written or submitted printed.

use anyhow::{Context, Result};
use clap::{Args, CommandFactory, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use warpdrive_core::batch::{self, htcondor, slurm, BatchFile, CommandShape, OptionShape, Split};

#[derive(Subcommand)]
pub enum SubmitCommand {
    /// Write and submit a Slurm job array (`--job-index $SLURM_ARRAY_TASK_ID`) and a merge job
    /// that runs after it (`--dependency=afterok`).
    Slurm(SlurmArgs),
    /// Write an HTCondor submit description (`queue N`, `--job-index $(Process)`), the merge's
    /// and a DAGMan file (merge as the child node), and submit the DAG (`condor_submit_dag`).
    Htcondor(CondorArgs),
}

#[derive(Args)]
pub struct Shared {
    /// GPUs per job (0: CPU jobs, e.g. with --device cpu in the command).
    #[arg(long, default_value_t = 1)]
    gpus_per_job: u32,
    /// Directory of the scripts, logs and job outputs (default: OUT.jobs beside the command's
    /// -o OUT). A directory made by an earlier submission is reused.
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Write the files and print them; submit nothing.
    #[arg(long)]
    dry_run: bool,
    /// The warpdrive executable the jobs run (default: this one, by its absolute path).
    #[arg(long, value_name = "PATH")]
    warpdrive: Option<PathBuf>,
    /// The command to split, after `--`: `warpdrive <command> … --jobs N -o OUT` (any command
    /// with --jobs/--job-index and -o; the merged result goes to OUT).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

#[derive(Args)]
pub struct SlurmArgs {
    #[command(flatten)]
    shared: Shared,
    /// Partition (`#SBATCH --partition`).
    #[arg(long)]
    partition: Option<String>,
    /// Time limit per job (`#SBATCH --time`, e.g. 02:00:00).
    #[arg(long)]
    time: Option<String>,
    /// Account to charge (`#SBATCH --account`).
    #[arg(long)]
    account: Option<String>,
    /// Memory per job (`#SBATCH --mem`, e.g. 8G).
    #[arg(long)]
    mem: Option<String>,
    /// CPU cores per job (`#SBATCH --cpus-per-task`).
    #[arg(long)]
    cpus_per_task: Option<u32>,
    /// Run at most M jobs at once (`--array=0-(N-1)%M`).
    #[arg(long, value_name = "M")]
    max_running: Option<u32>,
    /// Another sbatch option for the jobs and the merge, as one word (`--sbatch-arg=--qos=long`);
    /// repeatable.
    #[arg(long, value_name = "OPTION", allow_hyphen_values = true)]
    sbatch_arg: Vec<String>,
}

#[derive(Args)]
pub struct CondorArgs {
    #[command(flatten)]
    shared: Shared,
    /// CPU cores per job (`request_cpus`).
    #[arg(long, default_value_t = 1)]
    cpus_per_task: u32,
    /// Memory per job (`request_memory`, HTCondor's units: 2GB, 4096M).
    #[arg(long, default_value = "2GB")]
    mem: String,
    /// Disk per job (`request_disk`, e.g. 4GB).
    #[arg(long)]
    disk: Option<String>,
    /// Another submit command for the jobs, `name = value` (`--submit-line 'requirements =
    /// HasSingularity'`, `transfer_input_files = …`); repeatable.
    #[arg(long, value_name = "LINE", allow_hyphen_values = true)]
    submit_line: Vec<String>,
}

/// Every command of this binary as `batch` sees it: its words and options.
fn shapes() -> Vec<CommandShape> {
    fn walk(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<CommandShape>) {
        let options = cmd
            .get_arguments()
            .filter(|a| !a.is_positional())
            .map(|a| OptionShape {
                long: a.get_long().map(str::to_string),
                short: a.get_short(),
                takes_value: a.get_action().takes_values(),
            })
            .collect();
        out.push(CommandShape {
            path: path.clone(),
            options,
        });
        for s in cmd.get_subcommands() {
            let mut p = path.clone();
            p.push(s.get_name().to_string());
            walk(s, p, out);
        }
    }
    let mut cmd = crate::Cli::command();
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, Vec::new(), &mut out);
    out
}

/// The command taken apart and checked: by this binary's parser first (so a typo fails here,
/// not in every job), then by `batch`.
fn split(s: &Shared, force: bool) -> Result<Split> {
    let words = batch::command_words(&s.command);
    if let Err(e) = crate::Cli::try_parse_from(std::iter::once(OsString::from("warpdrive")).chain(words.iter().cloned())) {
        let text = e.render().to_string();
        let text = text.trim().trim_start_matches("error: ");
        anyhow::bail!("the command to submit does not parse: {text}");
    }
    let program = match &s.warpdrive {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("the path of this executable (pass --warpdrive PATH)")?,
    };
    Ok(Split::new(words, &shapes(), &program, s.work_dir.as_deref(), force)?)
}

fn print_files(split: &Split, files: &[BatchFile]) {
    for f in files {
        println!("==> {} <==", split.work_dir.join(&f.name).display());
        println!("{}", f.text.trim_end());
    }
}

pub fn run(what: &SubmitCommand, force: bool) -> Result<()> {
    match what {
        SubmitCommand::Slurm(a) => {
            let s = split(&a.shared, force)?;
            let opts = slurm::SlurmOptions {
                gpus_per_job: a.shared.gpus_per_job,
                partition: a.partition.clone(),
                time: a.time.clone(),
                account: a.account.clone(),
                mem: a.mem.clone(),
                cpus_per_task: a.cpus_per_task,
                max_running: a.max_running,
                sbatch_args: a.sbatch_arg.clone(),
            };
            let sc = slurm::scripts(&s, &opts)?;
            let files = [sc.array, sc.merge];
            batch::write_files(&s, &files)?;
            if a.shared.dry_run {
                print_files(&s, &files);
                println!("dry run: nothing submitted; submit with warpdrive submit slurm without --dry-run");
                return Ok(());
            }
            let ids = slurm::submit(&s)?;
            println!(
                "array job:       {} ({} jobs, {})",
                ids.array,
                s.jobs,
                s.work_dir.join(slurm::ARRAY_SCRIPT).display()
            );
            println!(
                "merge job:       {} (after the array succeeded) -> {}",
                ids.merge,
                s.output.display()
            );
        }
        SubmitCommand::Htcondor(a) => {
            let s = split(&a.shared, force)?;
            let opts = htcondor::CondorOptions {
                gpus_per_job: a.shared.gpus_per_job,
                cpus: a.cpus_per_task,
                memory: a.mem.clone(),
                disk: a.disk.clone(),
                submit_lines: a.submit_line.clone(),
            };
            let files = htcondor::files(&s, &opts)?.all();
            batch::write_files(&s, &files)?;
            for input in s.relative_inputs() {
                eprintln!(
                    "note: '{input}' is a relative path; HTCondor jobs run in {} (or a grid slot): give it absolute, or transfer it (--submit-line 'transfer_input_files = …')",
                    s.work_dir.display()
                );
            }
            if a.shared.dry_run {
                print_files(&s, &files);
                println!(
                    "dry run: nothing submitted; submit with: cd {} && condor_submit_dag {}",
                    s.work_dir.display(),
                    htcondor::DAG
                );
                return Ok(());
            }
            println!("{}", htcondor::submit(&s)?.trim_end());
            println!("DAG submitted:   {} jobs, then the merge -> {}", s.jobs, s.output.display());
        }
    }
    Ok(())
}
