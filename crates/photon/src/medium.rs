//! The propagation medium as the kernel sees it (params, DESIGN.md §4): flat tables of
//! absorption and scattering per (wavelength slice, layer), the wavelength slices with their
//! refractive indices, scattering-function parameters, anisotropy and tilt.

use crate::birefringence::Birefringence;
use crate::config::Config;
use crate::hole::HoleParams;
use crate::ice::Layers;
use crate::optics;
use crate::tilt::Tilt;

/// Number of equal-probability wavelength slices (PPC `WNUM`, spec §3.2).
pub const WNUM: usize = 512;

/// One wavelength slice.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slice {
    /// Wavelength [nm] at which the ice and the refractive index are tabulated.
    pub wavelength: f32,
    /// The slice's edges [nm]: a hit's wavelength is drawn uniformly between them (PPC prints
    /// `wvs[n].x()`, uniform in its slice), so outputs carry a continuous spectrum, not 512 values.
    pub lo: f32,
    pub hi: f32,
    /// Phase index n_p.
    pub n_phase: f32,
    /// Inverse group velocity n_g/c [ns/m].
    pub ocm: f32,
}

impl Slice {
    /// The wavelength [nm] a hit of this slice carries: uniform between the slice's edges for
    /// `u` in (0, 1] (PPC's `wvs[n].x()`, ini.cxx; issue #29). The photon's ice, refractive
    /// index and group velocity are the slice's (`wavelength`), as PPC's `wvs[n].w`: only the
    /// printed value is continuous.
    #[inline]
    #[must_use]
    pub fn hit_wavelength(&self, u: f32) -> f32 {
        self.lo + (self.hi - self.lo) * u
    }
}

/// Scattering anisotropy frame and coefficients (SPICE Lea / 3.x, spec §3.5 step 6), and the
/// absorption anisotropy exponents (step 2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AnisotropyParams {
    /// cos, sin of the major-axis azimuth.
    pub azx: f32,
    pub azy: f32,
    /// k1, k2, kz = 1/(k1 k2) (exp of the cfg logs).
    pub k: [f32; 3],
    /// Exponent of the old absorption anisotropy (cfg 16).
    pub old_abs_scale: f32,
    /// New absorption anisotropy coefficients (exp of cfg 13–15), if given.
    pub new_abs: Option<[f32; 3]>,
}

impl AnisotropyParams {
    /// Components of `n` in the anisotropy frame (major axis, minor axis, z).
    #[inline]
    pub fn to_frame(&self, n: [f32; 3]) -> [f32; 3] {
        [self.azx * n[0] + self.azy * n[1], -self.azy * n[0] + self.azx * n[1], n[2]]
    }

    #[inline]
    pub fn from_frame(&self, m: [f32; 3]) -> [f32; 3] {
        [self.azx * m[0] - self.azy * m[1], self.azy * m[0] + self.azx * m[1], m[2]]
    }

    /// l_i = k_i² and 1/l_i (f32, in this order of operations; the GPU gets them from the host).
    #[inline]
    pub fn squares(&self) -> ([f32; 3], [f32; 3]) {
        let l = [self.k[0] * self.k[0], self.k[1] * self.k[1], self.k[2] * self.k[2]];
        (l, [1.0 / l[0], 1.0 / l[1], 1.0 / l[2]])
    }

    /// 1/k_i (f32; the GPU gets them from the host).
    #[inline]
    pub fn inverse_k(&self) -> [f32; 3] {
        [1.0 / self.k[0], 1.0 / self.k[1], 1.0 / self.k[2]]
    }

    /// Direction-dependent factor on the absorption coefficient (spec §3.5 step 2).
    /// Old model: nr = ((B2 − nB)·An/2)^fr with s_i = n_i², l_i = k_i², B2 = Σ 1/l_i,
    /// nB = Σ s_i/l_i, An = Σ s_i l_i (nr = 1 for isotropic ice). New model: nr *= 1/|(k1 n1, k2 n2, kz n3)|.
    #[inline]
    pub fn absorption_factor(&self, n: [f32; 3]) -> f32 {
        let m = self.to_frame(n);
        let mut nr = 1.0;
        if self.old_abs_scale != 0.0 {
            let (l, il) = self.squares();
            let s = [m[0] * m[0], m[1] * m[1], m[2] * m[2]];
            let b2 = il[0] + il[1] + il[2];
            let nb = s[0] * il[0] + s[1] * il[1] + s[2] * il[2];
            let an = s[0] * l[0] + s[1] * l[1] + s[2] * l[2];
            nr = ((b2 - nb) * an / 2.0).powf(self.old_abs_scale);
        }
        if let Some(k) = self.new_abs {
            let v = [k[0] * m[0], k[1] * m[1], k[2] * m[2]];
            nr /= (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        }
        nr
    }
}

/// The new absorption anisotropy's coefficients (k1, k2, kz) = exp(cfg lines 13–15), scaled so
/// that the absorption averaged over all directions is the layer's isotropic one (PPC prints
/// "Renorm. NI anisotropy"): for a spheroid k1 ≥ k2 = kz the mean of 1/|(k1 n1, k2 n2, kz n3)|
/// over the sphere is (1/k2)·asinh(s)/s = ln(r + s)/(s·k2) with r = k1/k2, s = √(r² − 1), and
/// every k is multiplied by it. spice_ftp-v3m and spice_bfr-v2 (0.6, −0.3, −0.3): 1.82212,
/// 0.740818 → 1.69545, 0.689318, as PPC prints (0.9305×; without it the absorption averaged 7.5 %
/// low). Other shapes are taken as given, as in PPC.
#[must_use]
pub fn renormalised_absorption_anisotropy(k: [f64; 3]) -> [f64; 3] {
    if k[0] >= k[1] && k[1] == k[2] {
        let r = k[0] / k[1];
        let s = (r * r - 1.0).sqrt();
        // PPC's threshold XXX = 1e-5 and its first-order form below it.
        let mean = if s > 1e-5 { (r + s).ln() / s } else { 1.0 + s / 2.0 } / k[1];
        [k[0] * mean, k[1] * mean, k[2] * mean]
    } else {
        k
    }
}

/// Everything the propagation loop reads about the ice.
#[derive(Clone, Debug)]
pub struct Medium {
    pub slices: Vec<Slice>,
    pub n_layers: usize,
    /// z of the centre of layer 0 (deepest) and the layer thickness [m].
    pub hmin: f32,
    pub dh: f32,
    /// abs[slice · n_layers + layer], sca[...]: absorption and geometric scattering coefficients
    /// [1/m]; sca = b_e/(1 − g) (spec §3.2).
    pub abs: Vec<f32>,
    pub sca: Vec<f32>,
    pub g: f32,
    pub f_sl: f32,
    pub anisotropy: Option<AnisotropyParams>,
    pub tilt: Tilt,
    /// The same coefficients factored as the spec writes them (used by the GPU's fast mode):
    /// per layer [bbl/(1−g), b_e(400)/(1−g), c1, t] and per slice [l_a, l_k, A·e^(−B/λ)], with
    /// sca = sb + se·l_a and abs = l_k·c1 + A·e^(−B/λ)·t, t = 1 + 0.01 δτ,
    /// c1 = D·a_dust + E − arf·A·e^(−B/400)·t.
    pub layer_factors: Vec<[f32; 4]>,
    pub slice_factors: Vec<[f32; 3]>,
    /// Birefringence (cfg lines 17–28): the diffusion along the path; its s_eff is taken out of
    /// `sca` and `layer_factors` (photon-ppc-phase2.md §1).
    pub bfr: Option<Birefringence>,
    /// Explicit hole ice (cfg lines 8–12 with a radius above 0, `hole.rs`): the column's
    /// coefficients and phase function. Its radius is also in `DomIndex::hole_radius`.
    pub hole: Option<HoleParams>,
}

impl Medium {
    /// Slice i at wavelength `quantile((i + ½)/WNUM)` of a given distribution, between
    /// `quantile(i/WNUM)` and `quantile((i + 1)/WNUM)` (the DOM-type envelope of
    /// [`crate::envelope`], which every ice set-up uses).
    pub fn with_quantiles(layers: &Layers, cfg: &Config, tilt: Tilt, quantile: impl Fn(f64) -> f64) -> Self {
        Self::tabulate(layers, cfg, tilt, quantile)
    }

    /// All slices at exactly `wavelength` [nm] (analytic checks).
    pub fn monochromatic(layers: &Layers, cfg: &Config, wavelength: f64, tilt: Tilt) -> Self {
        Self::tabulate(layers, cfg, tilt, |_| wavelength)
    }

    /// Tabulate with slice i at wavelength `at((i + ½)/WNUM)`.
    fn tabulate(layers: &Layers, cfg: &Config, tilt: Tilt, at: impl Fn(f64) -> f64) -> Self {
        let slices: Vec<Slice> = (0..WNUM)
            .map(|i| {
                let l = at((i as f64 + 0.5) / WNUM as f64);
                let lu = l * 1e-3;
                Slice {
                    wavelength: l as f32,
                    lo: at(i as f64 / WNUM as f64) as f32,
                    hi: at((i + 1) as f64 / WNUM as f64) as f32,
                    n_phase: optics::n_phase(lu) as f32,
                    ocm: (optics::n_group(lu) / optics::C_VACUUM) as f32,
                }
            })
            .collect();
        let n_layers = layers.rows.len();
        let p = &layers.par;
        let arf = if layers.flags.absm { 1.0 } else { 0.0 };
        let a400 = p.a * (-p.b / 400.0).exp();
        let bfr = Birefringence::new(cfg, layers, cfg.bfr_scales[0], cfg.bfr_scales[1]);
        // The scattering the birefringent diffusion replaces: ra·s_eff·(srf + srw·l_a).
        let removed = |layer: usize| bfr.as_ref().map_or((0.0, 0.0), |b| b.compensation(layer, layers.flags.bfrm));
        let layer_factors = (0..n_layers)
            .map(|layer| {
                let r = &layers.rows[n_layers - 1 - layer];
                let bbl = layers.bubbles.map_or(0.0, |b| b.at_depth(r.depth));
                let t = 1.0 + 0.01 * r.dtau;
                let (rf, rw) = removed(layer);
                [
                    ((bbl - rf) / (1.0 - cfg.g)) as f32,
                    ((r.be400 - rw) / (1.0 - cfg.g)) as f32,
                    (p.d * r.adust400 + p.e - arf * a400 * t) as f32,
                    t as f32,
                ]
            })
            .collect();
        let slice_factors = slices
            .iter()
            .map(|s| {
                let l = f64::from(s.wavelength);
                [
                    (l / 400.0).powf(-p.alpha) as f32,
                    (l / 400.0).powf(-p.kappa) as f32,
                    (p.a * (-p.b / l).exp()) as f32,
                ]
            })
            .collect();
        let mut abs = Vec::with_capacity(WNUM * n_layers);
        let mut sca = Vec::with_capacity(WNUM * n_layers);
        for s in &slices {
            for layer in 0..n_layers {
                let l = f64::from(s.wavelength);
                abs.push(layers.absorption(layer, l) as f32);
                let (rf, rw) = removed(layer);
                let la = (l / 400.0).powf(-p.alpha);
                sca.push(((layers.b_eff(layer, l) - rf - rw * la) / (1.0 - cfg.g)) as f32);
            }
        }
        let anisotropy = cfg.anisotropy.map(|a| {
            let (k1, k2) = (a.log_k1.exp(), a.log_k2.exp());
            AnisotropyParams {
                azx: a.azimuth_deg.to_radians().cos() as f32,
                azy: a.azimuth_deg.to_radians().sin() as f32,
                k: [k1 as f32, k2 as f32, (1.0 / (k1 * k2)) as f32],
                old_abs_scale: cfg.old_abs_scale as f32,
                new_abs: cfg.new_abs_anisotropy.map(|k| {
                    let k = renormalised_absorption_anisotropy([k[0].exp(), k[1].exp(), k[2].exp()]);
                    [k[0] as f32, k[1] as f32, k[2] as f32]
                }),
            }
        });
        Self {
            slices,
            n_layers,
            hmin: layers.hmin() as f32,
            dh: layers.dh as f32,
            abs,
            sca,
            g: cfg.g as f32,
            f_sl: cfg.f_sl as f32,
            anisotropy,
            tilt,
            layer_factors,
            slice_factors,
            bfr,
            hole: HoleParams::from_config(cfg.hole_ice),
        }
    }

    /// Every scattering coefficient positive (with birefringence, the removed s_eff part may
    /// exceed a layer's scattering: PPC stops with "Invalid value of ice parameter").
    pub fn check_scattering(&self) -> Result<(), String> {
        if let Some(i) = self.abs.iter().position(|&a| !(a.is_finite() && a > 0.0)) {
            return Err(format!(
                "absorption coefficient {} /m is not positive and finite in layer {} at {:.1} nm: check icemodel.dat, icemodel.par and cfg.txt",
                self.abs[i],
                i % self.n_layers,
                self.slices[i / self.n_layers].wavelength
            ));
        }
        match self.sca.iter().position(|&s| !(s.is_finite() && s > 0.0)) {
            None => Ok(()),
            Some(i) => Err(format!(
                "scattering coefficient {} /m ≤ 0 in layer {} at {:.1} nm after removing the birefringence part (s_eff {:e} /m × ra): check cfg.txt lines 17-28 and BFRA/BFRB/BFRM",
                self.sca[i],
                i % self.n_layers,
                self.slices[i / self.n_layers].wavelength,
                self.bfr.as_ref().map_or(0.0, |b| b.s_eff)
            )),
        }
    }

    /// Layer index (0 = deepest) of tilt-corrected height z': round((z' − hmin)/dh), clamped.
    #[inline]
    pub fn layer_of(&self, zp: f32) -> usize {
        // Multiplied by 1/dh (the GPU gets the same f32 value from the host).
        let i = ((zp - self.hmin) * (1.0 / self.dh)).round();
        if i <= 0.0 {
            0
        } else {
            (i as usize).min(self.n_layers - 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::{EmissionPoints, Envelope, Grid};
    use crate::spectrum::Spectrum;
    use crate::test_data::data_dir;

    /// The medium of one DOM type, as the detector builds it (full spectrum or WFLA line).
    fn one_type_medium(dir: &std::path::Path, wfla: Option<f64>) -> Medium {
        let layers = Layers::read_dir(dir, None, None).unwrap();
        let cfg = Config::read(&dir.join("cfg.txt")).unwrap();
        let (points, grid) = match wfla {
            Some(w) => (EmissionPoints::wfla(w), Grid::wfla(w)),
            None => (
                EmissionPoints::from_spectrum(&Spectrum::read(&dir.join("wv.dat")).unwrap()),
                Grid::FULL,
            ),
        };
        let e = Envelope::one_type(&points, 1.0, grid);
        Medium::with_quantiles(&layers, &cfg, Tilt::None, |p| e.quantile(p))
    }

    #[test]
    fn tables_for_spice_321() {
        let dir = data_dir().join("ice/spice_3.2.1");
        let m = one_type_medium(&dir, None);
        assert_eq!(m.slices.len(), WNUM);
        assert!(m.slices.windows(2).all(|w| w[0].wavelength <= w[1].wavelength));
        // Slices tile the spectrum: each one's edges hold its wavelength, and meet the next's.
        assert!(m.slices.iter().all(|s| s.lo <= s.wavelength && s.wavelength <= s.hi));
        assert!(m.slices.windows(2).all(|w| w[0].hi == w[1].lo));
        // WFLA 400 nm: slices on PPC's narrowed grid 400 ± 5 nm, taken one 1-nm bin low as PPC's
        // inverse does (crate::envelope): median 399 nm. Geometric scattering at the middle
        // slice = b_e(399)/(1 − g) = 10·b_e(400)·(399/400)^−α, b_e(400) = 0.155516 at the top.
        let m4 = one_type_medium(&dir, Some(400.0));
        assert!(m4.slices.iter().all(|s| (394.0..=404.0).contains(&s.wavelength)));
        assert!((m4.slices[WNUM / 2].wavelength - 399.0).abs() < 0.1);
        let top = m4.n_layers - 1;
        let alpha = Layers::read_dir(&dir, None, None).unwrap().par.alpha;
        let want = 1.55516 * (399.0f64 / 400.0).powf(-alpha);
        assert!((f64::from(m4.sca[(WNUM / 2) * m4.n_layers + top]) - want).abs() < 2e-3);
        assert!((m4.slices[WNUM / 2].ocm - (1.35611 / 0.299792458) as f32).abs() < 1e-3);
        // Layer lookup: centre of the deepest layer and of the top layer.
        assert_eq!(m.layer_of(m.hmin), 0);
        assert_eq!(m.layer_of(m.hmin + 170.0 * m.dh + 4.0), 170);
        assert_eq!(m.layer_of(1e4), 170);
        assert_eq!(m.layer_of(-1e4), 0);
    }

    /// The factored form reproduces the tables to float rounding.
    #[test]
    fn factored_coefficients_match_tables() {
        for m in ["spice_3.2.1", "spice_bfr-v2"] {
            let dir = data_dir().join("ice").join(m);
            let med = one_type_medium(&dir, None);
            for w in [0, 100, 511] {
                for j in 0..med.n_layers {
                    let (lf, sf) = (med.layer_factors[j], med.slice_factors[w]);
                    let sca = lf[0] + lf[1] * sf[0];
                    let abs = sf[1] * lf[2] + sf[2] * lf[3];
                    let k = w * med.n_layers + j;
                    assert!((sca / med.sca[k] - 1.0).abs() < 1e-5, "{m} sca {w} {j}");
                    assert!((abs / med.abs[k] - 1.0).abs() < 1e-5, "{m} abs {w} {j}: {abs} {}", med.abs[k]);
                }
            }
        }
    }

    /// Absorption anisotropy: isotropic ice gives 1; for SPICE 3.2.1 less absorption along the
    /// major axis (k1 < 1) and more along the minor one (computed by hand from the spec formula).
    #[test]
    fn absorption_anisotropy_renormalised_as_ppc_prints() {
        // PPC (spice_ftp-v3m, spice_bfr-v2 logs): "New Ice anisotropy is 1.82212,0.740818,0.740818",
        // "Renorm. NI anisotropy 1.69545,0.689318,0.689318".
        let k = renormalised_absorption_anisotropy([0.6f64.exp(), (-0.3f64).exp(), (-0.3f64).exp()]);
        // PPC computes in f32 and prints 6 digits: equal within the printed rounding + 1e-6 relative.
        for (v, printed) in k.iter().zip([1.69545, 0.689318, 0.689318]) {
            assert!((v - printed).abs() <= 5e-6 * printed + 1e-6 * v, "{v} vs {printed}");
        }
        // The direction average of 1/|k·n| is then 1 (isotropic absorption on average).
        let n = 200_000;
        let mean: f64 = (0..n)
            .map(|i| {
                let mu = (i as f64 + 0.5) / n as f64; // cos to the k1 axis, uniform on the sphere
                1.0 / (k[0] * k[0] * mu * mu + k[1] * k[1] * (1.0 - mu * mu)).sqrt()
            })
            .sum::<f64>()
            / n as f64;
        assert!((mean - 1.0).abs() < 1e-6, "{mean}");
        // Other shapes as given.
        assert_eq!(renormalised_absorption_anisotropy([1.0, 2.0, 3.0]), [1.0, 2.0, 3.0]);
    }

    #[test]
    fn absorption_anisotropy_factor() {
        let iso = AnisotropyParams {
            azx: 1.0,
            azy: 0.0,
            k: [1.0; 3],
            old_abs_scale: 1.0,
            new_abs: None,
        };
        assert!((iso.absorption_factor([0.6, 0.0, 0.8]) - 1.0).abs() < 1e-6);
        let a = 130f32.to_radians();
        let (k1, k2) = ((-0.069f32).exp(), 0.0345f32.exp());
        let p = AnisotropyParams {
            azx: a.cos(),
            azy: a.sin(),
            k: [k1, k2, 1.0 / (k1 * k2)],
            old_abs_scale: 1.0,
            new_abs: None,
        };
        let along = p.absorption_factor([a.cos(), a.sin(), 0.0]);
        let l = [k1 * k1, k2 * k2, 1.0 / (k1 * k1 * k2 * k2)];
        let want = (1.0 / l[1] + 1.0 / l[2]) * l[0] / 2.0;
        assert!((along - want).abs() < 1e-5 && along < 1.0, "{along} {want}");
        let across = p.absorption_factor([-a.sin(), a.cos(), 0.0]);
        assert!(across > 1.0);
    }
}
