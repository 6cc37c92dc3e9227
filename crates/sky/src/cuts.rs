//! Which events enter the analysis: sky region and nested energy cuts.
//!
//! Energy cuts are nested thresholds E ≥ t₁ ≤ t₂ ≤ … on the energy proxy. Cut 0 is always "all
//! events". Each event gets a *level* ℓ = the number of thresholds it passes, and a pair belongs
//! to cut c when min(ℓ_i, ℓ_j) ≥ c (spec §4, implication 3), so one pass counts every cut.
//!
//! A "top fraction f" cut uses the spec's tie rule (§3.2): with the energies sorted in
//! decreasing order, the threshold is the k-th highest value, k = ⌈f·N⌉, and *every* event with
//! E ≥ threshold passes — ties at the threshold are kept, so a cut can hold more than f·N events
//! (IC86-2011 upgoing: top 10 % ↔ log10 E ≥ 3.4, 7 026 events rather than 6 923).

use crate::events::Event;
use std::fmt;

/// Part of the sky to analyse.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Region {
    /// Keep events with dec_min ≤ δ ≤ dec_max [deg].
    pub dec_min: f64,
    pub dec_max: f64,
}

impl Region {
    pub const ALL: Region = Region {
        dec_min: -90.0,
        dec_max: 90.0,
    };

    /// `all`, `north` (δ ≥ 0) or `south` (δ < 0, i.e. up to the largest double below 0).
    pub fn hemisphere(name: &str) -> Result<Region, String> {
        match name {
            "all" => Ok(Self::ALL),
            "north" => Ok(Region {
                dec_min: 0.0,
                dec_max: 90.0,
            }),
            "south" => Ok(Region {
                dec_min: -90.0,
                dec_max: -f64::MIN_POSITIVE,
            }),
            _ => Err(format!("hemisphere '{name}': expected all, north or south")),
        }
    }

    #[must_use]
    pub fn contains(&self, e: &Event) -> bool {
        (self.dec_min..=self.dec_max).contains(&e.dec)
    }
}

/// One energy cut as the user gave it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EnergyCut {
    /// The highest fraction f ∈ (0, 1] of events, ties at the threshold included.
    TopFraction(f64),
    /// Events with E ≥ the value.
    Threshold(f64),
}

impl fmt::Display for EnergyCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnergyCut::TopFraction(x) => write!(f, "top {}%", x * 100.0),
            EnergyCut::Threshold(t) => write!(f, "E >= {t}"),
        }
    }
}

impl EnergyCut {
    /// Parse `top:0.01`, `1%` or a bare threshold value.
    pub fn parse(s: &str) -> Result<EnergyCut, String> {
        let s = s.trim();
        let frac = if let Some(v) = s.strip_prefix("top:") {
            Some(v.parse::<f64>().map_err(|_| format!("energy cut '{s}': '{v}' is not a number"))?)
        } else if let Some(v) = s.strip_suffix('%') {
            Some(v.parse::<f64>().map_err(|_| format!("energy cut '{s}': '{v}' is not a number"))? / 100.0)
        } else {
            None
        };
        match frac {
            Some(f) if f > 0.0 && f <= 1.0 => Ok(EnergyCut::TopFraction(f)),
            Some(_) => Err(format!("energy cut '{s}': the fraction must be in (0, 1]")),
            None => {
                let t: f64 = s
                    .parse()
                    .map_err(|_| format!("energy cut '{s}': expected top:F, P% or a threshold value"))?;
                if t.is_finite() {
                    Ok(EnergyCut::Threshold(t))
                } else {
                    Err(format!("energy cut '{s}': the threshold must be finite"))
                }
            }
        }
    }
}

/// The default cuts of the spec: top 10 %, 1 %, 0.1 % (plus the implicit "all").
#[must_use]
pub fn default_cuts() -> Vec<EnergyCut> {
    vec![
        EnergyCut::TopFraction(0.1),
        EnergyCut::TopFraction(0.01),
        EnergyCut::TopFraction(0.001),
    ]
}

/// Resolved cuts: one threshold per user cut (cut 0 = all events has none).
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedCuts {
    pub cuts: Vec<EnergyCut>,
    pub thresholds: Vec<f64>,
    /// Events passing each cut, cut 0 (all) first.
    pub counts: Vec<usize>,
}

impl ResolvedCuts {
    /// Number of levels, i.e. cuts including "all".
    #[must_use]
    pub fn levels(&self) -> usize {
        self.thresholds.len() + 1
    }

    /// ℓ = the number of thresholds that `energy` reaches.
    #[must_use]
    pub fn level(&self, energy: f64) -> u8 {
        self.thresholds.iter().filter(|&&t| energy >= t).count() as u8
    }

    /// Human label of cut `c` (0 = all).
    #[must_use]
    pub fn label(&self, c: usize) -> String {
        if c == 0 {
            "all".into()
        } else {
            self.cuts[c - 1].to_string()
        }
    }
}

/// Threshold of the top fraction `f` of `energies` under the tie rule above.
#[must_use]
pub fn top_fraction_threshold(energies: &[f64], f: f64) -> f64 {
    let mut e = energies.to_vec();
    e.sort_by(|a, b| b.total_cmp(a));
    // ⌈f·N⌉ with a guard against f·N landing one ulp above an integer.
    let k = ((f * e.len() as f64 - 1e-9).ceil() as usize).clamp(1, e.len());
    e[k - 1]
}

/// Resolve `cuts` on the selected events; they must be nested (each at least as strict as the
/// one before), since pair levels rely on it.
pub fn resolve(events: &[Event], cuts: &[EnergyCut]) -> Result<ResolvedCuts, String> {
    if cuts.len() > 250 {
        return Err(format!("{} energy cuts: at most 250 are supported", cuts.len()));
    }
    let energies: Vec<f64> = events.iter().map(|e| e.energy).collect();
    let thresholds: Vec<f64> = cuts
        .iter()
        .map(|c| match *c {
            EnergyCut::TopFraction(f) => top_fraction_threshold(&energies, f),
            EnergyCut::Threshold(t) => t,
        })
        .collect();
    for w in 1..thresholds.len() {
        if thresholds[w] < thresholds[w - 1] {
            return Err(format!(
                "energy cuts must be nested, each as strict as the one before: '{}' (E >= {}) is looser than '{}' (E >= {})",
                cuts[w],
                thresholds[w],
                cuts[w - 1],
                thresholds[w - 1]
            ));
        }
    }
    let mut counts = vec![events.len()];
    counts.extend(thresholds.iter().map(|&t| energies.iter().filter(|&&e| e >= t).count()));
    if let Some(c) = counts.iter().position(|&n| n == 0) {
        return Err(format!("energy cut '{}' selects no events", cuts[c - 1]));
    }
    Ok(ResolvedCuts {
        cuts: cuts.to_vec(),
        thresholds,
        counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tie_rule_keeps_every_event_at_the_threshold() {
        let e = [5.0, 4.0, 4.0, 4.0, 3.0, 2.0, 1.0, 1.0, 0.5, 0.0];
        // Top 20 % of 10 = 2 events: the 2nd highest is 4.0, and all three 4.0s pass.
        assert_eq!(top_fraction_threshold(&e, 0.2), 4.0);
        assert_eq!(top_fraction_threshold(&e, 0.1), 5.0);
        assert_eq!(top_fraction_threshold(&e, 1.0), 0.0);
        assert_eq!(top_fraction_threshold(&e, 0.0001), 5.0);
    }

    #[test]
    fn parse_and_nesting() {
        assert_eq!(EnergyCut::parse("top:0.01"), Ok(EnergyCut::TopFraction(0.01)));
        assert_eq!(EnergyCut::parse("10%"), Ok(EnergyCut::TopFraction(0.1)));
        assert_eq!(EnergyCut::parse("3.4"), Ok(EnergyCut::Threshold(3.4)));
        assert!(EnergyCut::parse("top:2").is_err());
        assert!(EnergyCut::parse("x").is_err());
        let ev: Vec<Event> = (0..10)
            .map(|i| Event {
                ra: 0.0,
                dec: 0.0,
                energy: f64::from(i),
                ang_err: None,
            })
            .collect();
        let r = resolve(&ev, &[EnergyCut::Threshold(3.0), EnergyCut::TopFraction(0.2)]).unwrap();
        assert_eq!(r.thresholds, vec![3.0, 8.0]);
        assert_eq!(r.counts, vec![10, 7, 2]);
        assert_eq!((r.level(2.0), r.level(3.0), r.level(9.0)), (0, 1, 2));
        assert!(resolve(&ev, &[EnergyCut::TopFraction(0.1), EnergyCut::TopFraction(0.5)])
            .unwrap_err()
            .contains("nested"));
        assert!(resolve(&ev, &[EnergyCut::Threshold(100.0)])
            .unwrap_err()
            .contains("selects no events"));
    }
}
