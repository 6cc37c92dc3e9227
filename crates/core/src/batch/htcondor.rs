//! HTCondor: a submit description that queues one process per job (`--job-index $(Process)`),
//! the merge's submit description, and a DAGMan file that runs the merge after every job
//! succeeded (`PARENT work CHILD merge`).
//!
//! The jobs run in the work directory (`initialdir`) and write `job-$(Process)` there — on a
//! shared file system directly, on a grid (IceCube's, the OSPool) in the slot's scratch
//! directory, from where HTCondor's file transfer brings it back (`transfer_output_files`). The
//! merge runs on the access point (`universe = local`), where the job outputs have arrived.

use super::quote::{condor_arguments, shell};
use super::{one_line, run_tool, BatchError, BatchFile, JobPaths, Split};
use std::ffi::OsStr;

/// The jobs' submit description.
pub const WORK_SUBMIT: &str = "work.sub";
/// One job again, by index (`condor_submit -append 'job_index = I' rerun.sub`).
pub const RERUN_SUBMIT: &str = "rerun.sub";
/// The merge's submit description.
pub const MERGE_SUBMIT: &str = "merge.sub";
/// The DAG of both.
pub const DAG: &str = "work.dag";

/// What each job asks HTCondor for.
#[derive(Clone, Debug)]
pub struct CondorOptions {
    /// `request_gpus` (0: CPU jobs, the line is left out).
    pub gpus_per_job: u32,
    /// `request_cpus`.
    pub cpus: u32,
    /// `request_memory` (HTCondor's units: `2GB`, `4096M`, a number of MiB).
    pub memory: String,
    /// `request_disk`, if given.
    pub disk: Option<String>,
    /// More submit commands for the jobs, one `name = value` each (`+AccountingGroup = "…"`,
    /// `transfer_input_files = …`, `requirements = …`).
    pub submit_lines: Vec<String>,
}

impl Default for CondorOptions {
    fn default() -> Self {
        CondorOptions {
            gpus_per_job: 1,
            cpus: 1,
            memory: "2GB".into(),
            disk: None,
            submit_lines: Vec::new(),
        }
    }
}

/// The four files.
#[derive(Clone, Debug)]
pub struct CondorFiles {
    pub work: BatchFile,
    pub rerun: BatchFile,
    pub merge: BatchFile,
    pub dag: BatchFile,
}

impl CondorFiles {
    #[must_use]
    pub fn all(&self) -> Vec<BatchFile> {
        vec![self.work.clone(), self.rerun.clone(), self.merge.clone(), self.dag.clone()]
    }
}

/// A submit-description value on one line, with `$` kept literal (`$(DOLLAR)`).
fn value(option: &'static str, v: &str) -> Result<String, BatchError> {
    one_line(option, v)?;
    Ok(v.replace('$', "$(DOLLAR)"))
}

/// The submit descriptions and the DAG of `split`.
pub fn files(split: &Split, o: &CondorOptions) -> Result<CondorFiles, BatchError> {
    if o.cpus == 0 {
        return Err(BatchError::BadOption {
            option: "--cpus-per-task",
            value: "0".into(),
            what: "a job needs at least one CPU",
        });
    }
    let work = value("--work-dir", &split.work_dir.to_string_lossy())?;
    let program = value("--warpdrive", &split.program.to_string_lossy())?;
    let memory = value("--mem", &o.memory)?;
    let n = split.jobs;
    let last = n - 1;
    let out = format!("job-$(job_index){}", split.extension());
    let arguments = condor_arguments(&split.job_words(JobPaths::Relative), "$(job_index)")?;

    let mut body = String::new();
    body.push_str(&format!(
        "# warpdrive submit htcondor: {n} jobs of\n#   {}\n",
        split.description().replace('\n', " ")
    ));
    body.push_str(&format!(
        "# Job I runs the command with --job-index I and writes job-I{ext} in {work}\n\
         # (--force: a job run again replaces its own output); {MERGE_SUBMIT} merges job-0 … job-{last}.\n\
         # Run all of it: cd {work_q} && condor_submit_dag {DAG}\n\
         # Re-run failed job I alone (then the merge: condor_submit {MERGE_SUBMIT}):\n\
         #   cd {work_q} && condor_submit -append 'job_index = I' {RERUN_SUBMIT}\n",
        ext = split.extension(),
        work_q = shell(&split.work_dir.to_string_lossy()),
    ));
    body.push_str("universe = vanilla\n");
    body.push_str(&format!("executable = {program}\n"));
    body.push_str("job_index = $(Process)\n");
    body.push_str(&format!("arguments = {arguments}\n"));
    body.push_str(&format!("initialdir = {work}\n"));
    body.push_str("log = work.log\n");
    body.push_str("output = job-$(job_index).out\n");
    body.push_str("error = job-$(job_index).err\n");
    body.push_str(&format!("request_cpus = {}\n", o.cpus));
    body.push_str(&format!("request_memory = {memory}\n"));
    if let Some(d) = &o.disk {
        body.push_str(&format!("request_disk = {}\n", value("--disk", d)?));
    }
    if o.gpus_per_job > 0 {
        body.push_str(&format!("request_gpus = {}\n", o.gpus_per_job));
    }
    body.push_str("should_transfer_files = IF_NEEDED\n");
    body.push_str("when_to_transfer_output = ON_EXIT\n");
    body.push_str(&format!("transfer_output_files = {out}\n"));
    for l in &o.submit_lines {
        one_line("--submit-line", l)?;
        if !l.contains('=') {
            return Err(BatchError::BadOption {
                option: "--submit-line",
                value: l.clone(),
                what: "a submit command is `name = value` (e.g. --submit-line 'requirements = HasSingularity')",
            });
        }
        body.push_str(l);
        body.push('\n');
    }
    let work_sub = format!("{body}queue {n}\n");
    let rerun = format!("# One job of {WORK_SUBMIT} again: condor_submit -append 'job_index = I' {RERUN_SUBMIT}\n{body}queue 1\n");

    let merge_args: Vec<Vec<super::Piece>> = split
        .merge_words(split.relative_job_outputs())
        .into_iter()
        .map(|w| vec![super::Piece::Text(w)])
        .collect();
    let merge = format!(
        "# warpdrive submit htcondor: the merge of the {n} jobs of {WORK_SUBMIT} into {}\n\
         # (the child node of {DAG}: it runs after every job succeeded, on the access point, where\n\
         # the job outputs are)\n\
         universe = local\n\
         executable = {program}\n\
         arguments = {}\n\
         initialdir = {work}\n\
         log = merge.log\n\
         output = merge.out\n\
         error = merge.err\n\
         queue\n",
        split.output.to_string_lossy(),
        condor_arguments(&merge_args, "")?,
    );
    let dag = format!(
        "# warpdrive submit htcondor: the {n} jobs, then their merge.\n\
         # cd {} && condor_submit_dag {DAG}\n\
         JOB work {WORK_SUBMIT}\n\
         JOB merge {MERGE_SUBMIT}\n\
         PARENT work CHILD merge\n",
        shell(&split.work_dir.to_string_lossy())
    );
    let file = |name: &str, text: String| BatchFile { name: name.into(), text };
    Ok(CondorFiles {
        work: file(WORK_SUBMIT, work_sub),
        rerun: file(RERUN_SUBMIT, rerun),
        merge: file(MERGE_SUBMIT, merge),
        dag: file(DAG, dag),
    })
}

/// Submit the written DAG (`condor_submit_dag work.dag` in the work directory); what it said.
pub fn submit(split: &Split) -> Result<String, BatchError> {
    run_tool("condor_submit_dag", &[OsStr::new(DAG)], &split.work_dir, "HTCondor")
}
