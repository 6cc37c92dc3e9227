//! Results of device checks (`warpdrive gpu-check`), shared by every domain.

/// One check: what was compared, whether it passed, and the numbers measured.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// Which domains' checks `gpu-check` runs (`--domain` / `domain=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Suite {
    /// Every domain's checks (not the hole-ice and flasher comparisons, which are steps of
    /// their own in `scripts/gpu-check photon`, nor the twin measurement).
    #[default]
    All,
    Photon,
    /// Only the photon hole-ice precise comparison.
    PhotonHole,
    /// Only the photon flasher precise comparison.
    PhotonFlasher,
    /// Only the photon twin measurement: GPU builds against the CPU's fast path photon by
    /// photon (issue #29).
    PhotonTwin,
    Sky,
    Em,
    Spline,
    Beam,
}

impl std::str::FromStr for Suite {
    type Err = crate::engine::ParamError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "all" => Suite::All,
            "photon" => Suite::Photon,
            "photon-hole" => Suite::PhotonHole,
            "photon-flasher" => Suite::PhotonFlasher,
            "photon-twin" => Suite::PhotonTwin,
            "sky" => Suite::Sky,
            "em" => Suite::Em,
            "spline" => Suite::Spline,
            "beam" => Suite::Beam,
            d => {
                return Err(crate::engine::ParamError::new(
                    "domain",
                    format!("{d}: expected all, photon, photon-hole, photon-flasher, photon-twin, sky, em, spline or beam"),
                ))
            }
        })
    }
}

impl Suite {
    /// Whether the checks of `part` run in this suite: their own suite, and every whole
    /// domain's in `All`.
    pub fn runs(self, part: Suite) -> bool {
        self == part || (self == Suite::All && !matches!(part, Suite::PhotonHole | Suite::PhotonFlasher | Suite::PhotonTwin))
    }
}

/// The checks of one `part` of a suite: `run`'s when the suite holds the part, else none
/// (each domain's `gpu_check::run_suite`).
pub fn part(suite: Suite, part: Suite, run: impl FnOnce() -> Result<Vec<Check>, String>) -> Result<Vec<Check>, crate::engine::Error> {
    if suite.runs(part) {
        run().map_err(crate::engine::Error::Failed)
    } else {
        Ok(Vec::new())
    }
}

/// The `gpu-check` report: every check's name, result and numbers, one JSON object a line.
pub fn report_json(checks: &[Check]) -> String {
    let rows: Vec<String> = checks
        .iter()
        .map(|c| format!("{{\"name\":{:?},\"passed\":{},\"detail\":{:?}}}", c.name, c.passed, c.detail))
        .collect();
    format!("[{}]\n", rows.join(",\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_by_name() {
        assert_eq!("photon-hole".parse::<Suite>().unwrap(), Suite::PhotonHole);
        let e = "chemistry".parse::<Suite>().unwrap_err();
        assert!(e
            .render(crate::engine::Style::Cli)
            .starts_with("--domain chemistry: expected all, photon,"));
        assert!(Suite::All.runs(Suite::Sky) && !Suite::All.runs(Suite::PhotonHole));
        assert!(Suite::PhotonHole.runs(Suite::PhotonHole) && !Suite::PhotonHole.runs(Suite::Photon));
        assert_eq!("photon-twin".parse::<Suite>().unwrap(), Suite::PhotonTwin);
        assert!(!Suite::All.runs(Suite::PhotonTwin) && !Suite::Photon.runs(Suite::PhotonTwin));
    }

    #[test]
    fn report_lines() {
        let c = Check {
            name: "a \"b\"".into(),
            passed: true,
            detail: "x\ny".into(),
        };
        assert_eq!(
            report_json(&[c]),
            "[{\"name\":\"a \\\"b\\\"\",\"passed\":true,\"detail\":\"x\\ny\"}]\n"
        );
    }
}
