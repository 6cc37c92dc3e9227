//! Results of device checks (`warpdrive gpu-check`), shared by every domain.

/// One check: what was compared, whether it passed, and the numbers measured.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}
