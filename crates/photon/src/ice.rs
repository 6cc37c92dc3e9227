//! The layered ice model of a PPC ice directory (spec §3.1–3.2): `icemodel.dat`,
//! `icemodel.par`, optional `icemodel.bbl` and `version`, and the optical coefficients they
//! give per wavelength and layer.

use std::path::{Path, PathBuf};
use warpdrive_core::error::{data_lines, parse_f64, read_text};
use warpdrive_core::InputError;

/// Depth of the IceCube coordinate origin below the surface [m]: z = ZOFF − depth.
pub const ZOFF: f64 = 1948.07;

/// One row of `icemodel.dat`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerRow {
    /// Depth of the layer centre [m].
    pub depth: f64,
    /// Effective scattering coefficient at 400 nm, b_e(400) [1/m].
    pub be400: f64,
    /// Dust absorption at 400 nm, a_dust(400) [1/m] (full absorption when `version` ≥ 20).
    pub adust400: f64,
    /// Temperature relative to 1730 m, δτ [K].
    pub dtau: f64,
    /// Optional per-layer anisotropy (log k1, log k2) and birefringence factors ra, rb
    /// (columns 7 and 8; default 1, photon-ppc-phase2.md §1).
    pub log_k: [f64; 2],
    pub bfr_ra: f64,
    pub bfr_rb: f64,
}

/// `icemodel.par`: wavelength dependences.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IcePar {
    /// Scattering exponent α (b_e ∝ (λ/400)^−α).
    pub alpha: f64,
    /// Absorption exponent κ (a_dust ∝ (λ/400)^−κ).
    pub kappa: f64,
    /// Pure-ice absorption A·e^(−B/λ): A [1/m], B [nm].
    pub a: f64,
    pub b: f64,
    /// Old 6-parameter files: D, E (already divided by 400^κ, spec §3.2).
    pub d: f64,
    pub e: f64,
}

impl Default for IcePar {
    /// SPICE 3.x / bfr / ftp values (spec §3.1).
    fn default() -> Self {
        Self {
            alpha: 0.898_608_505_726,
            kappa: 1.084_106_802_940,
            a: 6_954.090_332_031_25,
            b: 6_617.754_394_531_25,
            d: 1.0,
            e: 0.0,
        }
    }
}

/// Air-bubble scattering near the top (`icemodel.bbl`: b d1 d2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bubbles {
    pub b: f64,
    pub d1: f64,
    pub d2: f64,
}

impl Bubbles {
    /// bbl(d) = b·(1 − d/d1)·(1 − d/d2) for d < d1 and d < d2, else 0 (spec §3.2).
    #[must_use]
    pub fn at_depth(&self, d: f64) -> f64 {
        if d < self.d1 && d < self.d2 {
            self.b * (1.0 - d / self.d1) * (1.0 - d / self.d2)
        } else {
            0.0
        }
    }
}

/// How the `icemodel.dat` columns are interpreted (PPC's BFRM/ABSM switches and `version`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ModelFlags {
    /// ABSM=1: column 3 is the full absorption at 400 nm (arf = 1).
    pub absm: bool,
    /// BFRM mode (0, 1, 2): how the birefringence part is removed from scattering.
    pub bfrm: u8,
}

/// The layered ice of one model.
#[derive(Clone, Debug, PartialEq)]
pub struct Layers {
    pub source: PathBuf,
    pub rows: Vec<LayerRow>,
    /// Layer thickness dh [m].
    pub dh: f64,
    pub par: IcePar,
    pub bubbles: Option<Bubbles>,
    pub flags: ModelFlags,
}

impl Layers {
    /// A homogeneous medium (one 100 m "layer" that the walk extends to infinity) with the given
    /// effective scattering and absorption coefficients at 400 nm and no temperature term.
    pub fn homogeneous(be400: f64, a400: f64) -> Self {
        let par = IcePar::default();
        // Put all absorption into the dust term: a(400) = a_dust(400) with A·e^(−B/400) removed.
        let adust = a400 - par.a * (-par.b / 400.0).exp();
        Self {
            source: PathBuf::from("<built-in homogeneous ice>"),
            rows: vec![LayerRow {
                depth: ZOFF,
                be400,
                adust400: adust.max(1e-6),
                dtau: 0.0,
                log_k: [0.0; 2],
                bfr_ra: 1.0,
                bfr_rb: 1.0,
            }],
            dh: 100.0,
            par,
            bubbles: None,
            flags: ModelFlags::default(),
        }
    }

    /// Read `icemodel.dat`, `icemodel.par` and the optional `icemodel.bbl` and `version` of `dir`.
    /// `flags_override` (from the BFRM/ABSM environment) wins over `version`.
    pub fn read_dir(dir: &Path, bfrm: Option<u8>, absm: Option<bool>) -> Result<Self, InputError> {
        let mut flags = ModelFlags::default();
        let vpath = dir.join("version");
        if vpath.is_file() {
            let text = read_text(&vpath)?;
            let (line, l) = data_lines(&text).next().ok_or_else(|| InputError::file(&vpath, "empty"))?;
            let v = parse_f64(&vpath, line, "version", l.split_whitespace().next())?;
            // spec §3.2: version 10 ⇒ BFRM=2, 20 ⇒ ABSM=1, BFRM=1.
            if v >= 20.0 {
                flags = ModelFlags { absm: true, bfrm: 1 };
            } else if v >= 10.0 {
                flags.bfrm = 2;
            }
        }
        if let Some(b) = bfrm {
            flags.bfrm = b;
        }
        if let Some(a) = absm {
            flags.absm = a;
        }
        let par = read_par(&dir.join("icemodel.par"))?;
        let (rows, dh) = read_layers(&dir.join("icemodel.dat"))?;
        let bpath = dir.join("icemodel.bbl");
        let bubbles = if bpath.is_file() {
            let text = read_text(&bpath)?;
            let (line, l) = data_lines(&text).next().ok_or_else(|| InputError::file(&bpath, "empty"))?;
            let mut t = l.split_whitespace();
            let b = Bubbles {
                b: parse_f64(&bpath, line, "b", t.next())?,
                d1: parse_f64(&bpath, line, "d1", t.next())?,
                d2: parse_f64(&bpath, line, "d2", t.next())?,
            };
            Some(b)
        } else {
            None
        };
        let layers = Self {
            source: dir.join("icemodel.dat"),
            rows,
            dh,
            par,
            bubbles,
            flags,
        };
        layers.check_positive()?;
        Ok(layers)
    }

    /// z of the centre of the deepest layer: hmin = ZOFF − depth_max (spec §3.2).
    #[must_use]
    pub fn hmin(&self) -> f64 {
        ZOFF - self.rows.last().map_or(ZOFF, |r| r.depth)
    }

    /// Layer index in PPC order (0 = deepest) of icemodel.dat row `row`.
    fn row_of_layer(&self, layer: usize) -> &LayerRow {
        &self.rows[self.rows.len() - 1 - layer]
    }

    /// Effective scattering coefficient b_e(λ) of layer `layer` (0 = deepest) [1/m]:
    /// bbl + b_e(400)·(λ/400)^−α (spec §3.2; the birefringence part is kept, see Config::unsupported).
    #[must_use]
    pub fn b_eff(&self, layer: usize, lambda_nm: f64) -> f64 {
        let r = self.row_of_layer(layer);
        let la = (lambda_nm / 400.0).powf(-self.par.alpha);
        let bbl = self.bubbles.map_or(0.0, |b| b.at_depth(r.depth));
        bbl + r.be400 * la
    }

    /// Absorption coefficient a(λ) of layer `layer` [1/m] (spec §3.2):
    /// (D·a_dust(400) + E)·l_k + (A e^(−B/λ) − arf·A e^(−B/400)·l_k)(1 + 0.01 δτ).
    #[must_use]
    pub fn absorption(&self, layer: usize, lambda_nm: f64) -> f64 {
        let r = self.row_of_layer(layer);
        let p = &self.par;
        let lk = (lambda_nm / 400.0).powf(-p.kappa);
        let arf = if self.flags.absm { 1.0 } else { 0.0 };
        (p.d * r.adust400 + p.e) * lk + (p.a * (-p.b / lambda_nm).exp() - arf * p.a * (-p.b / 400.0).exp() * lk) * (1.0 + 0.01 * r.dtau)
    }

    fn check_positive(&self) -> Result<(), InputError> {
        for (i, r) in self.rows.iter().enumerate() {
            let layer = self.rows.len() - 1 - i;
            for l in [265.0, 400.0, 675.0] {
                if self.b_eff(layer, l) <= 0.0 || self.absorption(layer, l) <= 0.0 {
                    return Err(InputError::new(
                        &self.source,
                        i + 1,
                        format!("layer at depth {} m has non-positive scattering or absorption at {l} nm", r.depth),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn read_par(path: &Path) -> Result<IcePar, InputError> {
    let text = read_text(path)?;
    let names = ["alpha", "kappa", "A", "B", "D", "E"];
    let mut v = Vec::new();
    for (line, l) in data_lines(&text) {
        let name = names.get(v.len()).copied().unwrap_or("extra");
        v.push((line, parse_f64(path, line, name, l.split_whitespace().next())?));
    }
    if v.len() != 4 && v.len() != 6 {
        return Err(InputError::file(
            path,
            format!("expected 4 or 6 lines (alpha kappa A B [D E]), found {}", v.len()),
        ));
    }
    let mut p = IcePar {
        alpha: v[0].1,
        kappa: v[1].1,
        a: v[2].1,
        b: v[3].1,
        ..IcePar::default()
    };
    if v.len() == 6 {
        // spec §3.2: D ← D/400^κ, E ← E/400^κ for 6-parameter files.
        let s = 400f64.powf(p.kappa);
        p.d = v[4].1 / s;
        p.e = v[5].1 / s;
    }
    Ok(p)
}

fn read_layers(path: &Path) -> Result<(Vec<LayerRow>, f64), InputError> {
    let text = read_text(path)?;
    let mut rows: Vec<LayerRow> = Vec::new();
    let mut ncols = None;
    for (line, l) in data_lines(&text) {
        let t: Vec<&str> = l.split_whitespace().collect();
        if ![4, 6, 7, 8].contains(&t.len()) {
            return Err(InputError::new(
                path,
                line,
                format!(
                    "{} columns; expected 4 (depth b_e a_dust dtau), 6 (+k1 k2), 7 (+BFR ra) or 8 (+BFR rb)",
                    t.len()
                ),
            ));
        }
        if *ncols.get_or_insert(t.len()) != t.len() {
            return Err(InputError::new(path, line, "column count differs from the first line"));
        }
        let f = |i: usize, name: &str| parse_f64(path, line, name, t.get(i).copied());
        let row = LayerRow {
            depth: f(0, "depth")?,
            be400: f(1, "b_e(400)")?,
            adust400: f(2, "a_dust(400)")?,
            dtau: f(3, "delta_tau")?,
            log_k: if t.len() >= 6 { [f(4, "k1")?, f(5, "k2")?] } else { [0.0; 2] },
            bfr_ra: if t.len() >= 7 { f(6, "bfr ra")? } else { 1.0 },
            bfr_rb: if t.len() >= 8 { f(7, "bfr rb")? } else { 1.0 },
        };
        if let Some(prev) = rows.last() {
            if row.depth <= prev.depth {
                return Err(
                    InputError::new(path, line, format!("depth {} not increasing (previous {})", row.depth, prev.depth)).field("depth"),
                );
            }
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(InputError::file(path, "no layers"));
    }
    let dh = if rows.len() > 1 { rows[1].depth - rows[0].depth } else { 100.0 };
    for (i, w) in rows.windows(2).enumerate() {
        if ((w[1].depth - w[0].depth) - dh).abs() > 1e-5 * dh.max(w[1].depth.abs()) {
            return Err(
                InputError::new(path, i + 2, format!("layer spacing {} differs from {dh}", w[1].depth - w[0].depth)).field("depth"),
            );
        }
    }
    Ok((rows, dh))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data::{data_dir, scratch_dir};

    /// spec §3.1: 171 layers 1098.47…2798.47 m, 10 m thick; SPICE 3.x parameters.
    #[test]
    fn reads_spice_321_layers() {
        let l = Layers::read_dir(&data_dir().join("ice/spice_3.2.1"), None, None).unwrap();
        assert_eq!(l.rows.len(), 171);
        assert!((l.dh - 10.0).abs() < 1e-9);
        assert_eq!(l.rows[0].depth, 1098.47);
        assert_eq!(l.par, IcePar::default());
        assert!((l.hmin() - (ZOFF - 2798.47)).abs() < 1e-9);
    }

    /// Coefficients at 400 nm are the table values plus pure-ice absorption (spec §3.2).
    #[test]
    fn coefficients_at_400nm() {
        let l = Layers::read_dir(&data_dir().join("ice/spice_3.2.1"), None, None).unwrap();
        // Top row (depth 1098.47): b_e = 0.155516, a_dust = 0.0422557, δτ = −10.0326.
        let top = l.rows.len() - 1;
        assert!((l.b_eff(top, 400.0) - 0.155516).abs() < 1e-12);
        let pure = 6_954.090_332_031_25 * (-6_617.754_394_531_25f64 / 400.0).exp();
        let want = 0.0422557 + pure * (1.0 - 0.100326);
        assert!((l.absorption(top, 400.0) - want).abs() < 1e-12);
        assert!((pure - 4.5e-4).abs() < 1e-4, "pure-ice absorption at 400 nm ≈ 4.5e-4 /m: {pure}");
        // Deepest layer is the bedrock absorber.
        assert!(l.absorption(0, 400.0) > 900.0);
        // Wavelength dependence: b_e ∝ (λ/400)^−α.
        assert!((l.b_eff(top, 500.0) / l.b_eff(top, 400.0) - 1.25f64.powf(-0.898608505726)).abs() < 1e-12);
    }

    #[test]
    fn reads_every_shared_model() {
        for m in ["spice_3.2.1", "spice_bfr-v2", "spice_ftp-v3m", "spice_lea", "spice_mie"] {
            let l = Layers::read_dir(&data_dir().join("ice").join(m), None, None).unwrap_or_else(|e| panic!("{m}: {e}"));
            assert!(l.rows.len() > 100, "{m}");
        }
        let mie = Layers::read_dir(&data_dir().join("ice/spice_mie"), None, None).unwrap();
        assert!((mie.par.d - 71.402900695801 / 400f64.powf(mie.par.kappa)).abs() < 1e-12);
        let bfr = Layers::read_dir(&data_dir().join("ice/spice_bfr-v2"), None, None).unwrap();
        // Bubbles at 1098.47 m: 11.7·(1 − d/1350)·(1 − d/1400).
        let d = 1098.47;
        assert!((bfr.bubbles.unwrap().at_depth(d) - 11.7 * (1.0 - d / 1350.0) * (1.0 - d / 1400.0)).abs() < 1e-12);
    }

    #[test]
    fn bad_tables_name_line_and_field() {
        let par = "0.9\n1.08\n6954\n6617\n";
        let d = scratch_dir(
            "nonmono",
            &[
                ("icemodel.par", par),
                ("icemodel.dat", "1000 0.1 0.01 0\n1010 0.1 0.01 0\n1005 0.1 0.01 0\n"),
            ],
        );
        let e = Layers::read_dir(&d, None, None).unwrap_err().to_string();
        assert!(
            e.contains("icemodel.dat:3") && e.contains("'depth'") && e.contains("not increasing"),
            "{e}"
        );
        let d = scratch_dir(
            "cols",
            &[("icemodel.par", par), ("icemodel.dat", "1000 0.1 0.01 0\n1010 0.1 0.01\n")],
        );
        assert!(Layers::read_dir(&d, None, None)
            .unwrap_err()
            .to_string()
            .contains("icemodel.dat:2: 3 columns"));
        let d = scratch_dir("nan", &[("icemodel.par", par), ("icemodel.dat", "1000 0.1 nan 0\n")]);
        assert!(Layers::read_dir(&d, None, None).unwrap_err().to_string().contains("'a_dust(400)'"));
        let d = scratch_dir("neg", &[("icemodel.par", par), ("icemodel.dat", "1000 -0.1 0.01 0\n")]);
        assert!(Layers::read_dir(&d, None, None).unwrap_err().to_string().contains("non-positive"));
        let d = scratch_dir("nopar", &[("icemodel.dat", "1000 0.1 0.01 0\n")]);
        assert!(Layers::read_dir(&d, None, None)
            .unwrap_err()
            .to_string()
            .contains("icemodel.par: cannot read"));
    }
}
