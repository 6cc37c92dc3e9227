//! The `device` choice shared by every front end (the CLI's `--device`, the Python package's
//! `device=`): DESIGN.md §3.

use crate::cuda::{self, CudaError};

/// Resolve `auto|cpu|cuda|cuda:N|cuda:all` to GPU ordinals; `None` means the CPU path.
///
/// `auto` takes all GPUs when the driver, a GPU and NVRTC are there, else the CPU; the reason
/// for falling back is passed to `fallback` (the CLI prints it as one line on stderr).
pub fn resolve(device: &str, fallback: impl FnOnce(&str)) -> Result<Option<Vec<usize>>, CudaError> {
    match device {
        "cpu" => Ok(None),
        "auto" => match cuda::usable_devices() {
            Ok(n) => Ok(Some((0..n).collect())),
            Err(why) => {
                fallback(&why);
                Ok(None)
            }
        },
        d if d.starts_with("cuda") => Ok(Some(cuda::parse_devices(d)?)),
        d => Err(CudaError::Other(format!(
            "device {d}: expected auto, cpu, cuda, cuda:N or cuda:all"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(resolve("cpu", |_| {}).unwrap(), None);
        assert_eq!(resolve("cuda:3", |_| {}).unwrap(), Some(vec![3]));
        let e = resolve("gpu", |_| {}).unwrap_err().to_string();
        assert!(e.contains("expected auto, cpu, cuda"), "{e}");
        assert!(resolve("cuda:x", |_| {}).is_err());
    }
}
