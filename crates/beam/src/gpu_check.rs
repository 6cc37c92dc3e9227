//! Device checks of the beam domain (`warpdrive gpu-check --domain beam`):
//! * map tracking: GPU precise = CPU bit for bit (fused runs and one launch per element), GPU
//!   fast (FMA) within 1e-12 of each coordinate's size (root mean square of its values), on a line with every element kind, 3 passes,
//!   with an aperture that loses particles (loss flags identical) and NaN particles;
//! * apertures: MAXAMP (rectangular, elliptical), RCOL, ECOL lose the same particles at the same
//!   element and pass on the GPU as on the CPU (precise: bit-identical);
//! * non-finite losses without an aperture (the open run kernels: one finiteness test per pass,
//!   failing particles tracked again with the per-element test): the same loss element and pass
//!   and, precise, the same bits as the CPU, also with repeated cells as loops;
//! * RF: a ring with one RFCA, 100 passes: precise GPU bit-identical to the CPU but for the
//!   particles whose energy CUDA's sine rounds differently (< 1 %), every difference within 1e-8
//!   of a coordinate's size (the arrival time t − t_ref amplifies the last bit of t);
//! * kick–drift integrators (CSBEND, KQUAD, KSEXT, KOCT; issue #30): a ring of them, 20 passes,
//!   GPU within a bound derived from asin's rounding (precise) and FMA contraction (fast);
//! * LSC: every GPU histogram strategy gives the CPU's integer histogram; a line of quadrupoles
//!   and LSCDRIFTs tracked on GPU and CPU agrees to FFT rounding (δ, s) with cuFFT in use.

use crate::beam::{gaussian, BeamSpec, Particles, Plane, Reference};
use crate::gpu::{GpuBackend, GpuOptions};
use crate::lattice::parse;
use crate::lsc::{self, Histogram};
use crate::program::Program;
use crate::track::{track, Backend, CpuBackend, TrackOptions};
use std::path::Path;
use warpdrive_core::check::{Check, Suite};

/// A line with every element kind the GPU code generates (tilted sextupole, exact drift,
/// first-order quadrupole, marker, watch, LSCDRIFT, charge; combined-function sector bend with
/// edges and fringe, rectangular bend, thin sextupole MULT, KOCT, kicker, solenoid).
pub const ALL_KINDS: &str = "Q1: QUAD, L=0.3, K1=1.2\nQ2: QUAD, L=0.3, K1=-1.2, TILT=0.05\nD: DRIF, L=1.0\n\
S: SEXT, L=0.2, K2=8, TILT=0.2\nE: EDRIFT, L=0.5\nQ3: QUAD, L=0.25, K1=0.7, ORDER=1\nM: MARK\n\
B: SBEN, L=0.5, ANGLE=0.05, K1=0.2, K2=1, E1=0.02, E2=0.01, HGAP=0.02, FINT=0.5\nR: RBEN, L=0.4, ANGLE=-0.03\n\
MU: MULT, ORDER=2, KNL=0.5\nO: KOCT, L=0.2, K3=50\nK: KICKER, L=0.1, HKICK=1e-5, VKICK=-1e-5\nSO: SOLE, L=0.3, KS=0.4\n\
CELL: LINE=(Q1, D, M, Q2, D, S, E, Q3, B, MU, R, O, K, SO)\nALL: LINE=(3*CELL)\n";

/// Apertures (issue #30): MAXAMP rectangular and elliptical (exponent 4 in x), an offset thick
/// RCOL and an ECOL with unequal exponents in a FODO line; the beam of [`check_beam_spec`] loses
/// part of itself at each over 20 passes.
pub const APERTURE_LINE: &str = "Q1: QUAD, L=0.3, K1=1.2\nQ2: QUAD, L=0.3, K1=-1.2\nD: DRIF, L=1.0\n\
MA: MAXAMP, X_MAX=9e-4, Y_MAX=8e-4\nME: MAXAMP, X_MAX=8.5e-4, Y_MAX=7e-4, ELLIPTICAL=1, EXPONENT=4, YEXPONENT=2\n\
RC: RCOL, L=0.3, X_MAX=7e-4, Y_MAX=6e-4, DX=5e-5, DY=-3e-5\nEC: ECOL, L=0.2, X_MAX=8e-4, Y_MAX=5.5e-4, EXPONENT=2, YEXPONENT=4\n\
CELL: LINE=(MA, Q1, D, ME, Q2, D, RC, Q1, D, EC, Q2, D)\nAP: LINE=(2*CELL)\n";

/// Open sides and inverted openings (issue #30): a MAXAMP open on +x, an RCOL open on −y, an
/// inverted offset RCOL (a wire in the beam), an ECOL open on −x and an inverted ECOL open on +y,
/// in the FODO line of [`APERTURE_LINE`]; the beam of [`check_beam_spec`] loses part of itself at
/// each over 20 passes.
pub const OPEN_APERTURE_LINE: &str = "Q1: QUAD, L=0.3, K1=1.2\nQ2: QUAD, L=0.3, K1=-1.2\nD: DRIF, L=1.0\n\
MO: MAXAMP, X_MAX=8e-4, Y_MAX=9e-4, OPEN_SIDE=\"+x\"\nRO: RCOL, L=0.2, X_MAX=7e-4, Y_MAX=6e-4, DY=2e-5, OPEN_SIDE=\"-y\"\n\
RI: RCOL, X_MAX=4e-5, Y_MAX=3e-5, DX=1e-5, INVERT=1\nEO: ECOL, L=0.1, X_MAX=6e-4, Y_MAX=6.5e-4, OPEN_SIDE=\"-x\", YEXPONENT=4\n\
EI: ECOL, X_MAX=5e-5, Y_MAX=4e-5, OPEN_SIDE=\"+y\", INVERT=1\n\
CELL: LINE=(MO, Q1, D, RO, Q2, D, RI, Q1, D, EO, EI, Q2, D)\nOP: LINE=(2*CELL)\n";

/// RF (issue #30): a FODO ring of four cells with sector bends (momentum compaction 2.5·10⁻²)
/// and one RFCA at the stable phase above transition, 1 MV at 500 MHz for the 511 MeV electrons
/// of [`check_beam_spec`]: synchrotron tune 0.013, so 100 passes are 1.3 synchrotron periods.
pub const RF_LINE: &str = "Q1: QUAD, L=0.3, K1=1.2\nQ2: QUAD, L=0.3, K1=-1.2\nD: DRIF, L=1.0\nB: SBEN, L=1.0, ANGLE=0.1\n\
RF: RFCA, L=0.4, VOLT=1e6, FREQ=5e8, PHASE=180\nCELL: LINE=(Q1, D, B, D, Q2, D, B, D)\nRING: LINE=(RF, 4*CELL)\n";

/// Kick–drift integrators (issue #30): a FODO ring of four cells (the FODO validation ring's
/// optics) whose magnets are ELEGANT's kick elements, tracked by their integrators on both
/// devices: combined-function CSBENDs with edges and fringe, a tilted plain CSBEND, KQUADs (one
/// tilted), KSEXTs (INTEGRATION_ORDER 2 and 4), a KOCT of order 6.
pub const KICK_LINE: &str = "QF: KQUAD, L=0.4, K1=0.62, N_KICKS=8\nQD: KQUAD, L=0.4, K1=-0.58, N_KICKS=8, TILT=0.01\n\
SF: KSEXT, L=0.2, K2=9, N_KICKS=4\nSD: KSEXT, L=0.2, K2=-15, N_KICKS=4, INTEGRATION_ORDER=2\nO: KOCT, L=0.2, K3=200, INTEGRATION_ORDER=6\n\
B: CSBEND, L=2.2, ANGLE=0.19634954084936207, K1=-0.02, K2=0.5, E1=0.05, E2=0.03, HGAP=0.02, FINT=0.5, N_KICKS=8\n\
BT: CSBEND, L=2.2, ANGLE=0.19634954084936207, TILT=0.02\nD1: DRIF, L=0.35\nD2: DRIF, L=0.3\nD3: DRIF, L=1.15\n\
CELL: LINE=(QF, D1, SF, D2, B, D3, O, QD, D1, SD, D2, BT, D3)\nRING: LINE=(4*CELL)\n";

/// The reference particle of the RF line's checks (its cavity needs one at compile time).
pub fn rf_reference() -> Reference {
    Reference::electron(1000.0)
}

const LSC_LINE: &str = "C: CHARGE, TOTAL=1e-9\nQF: QUAD, L=0.2, K1=1.5\nQD: QUAD, L=0.2, K1=-1.5\n\
L1: LSCDRIFT, L=0.8, BINS=256\nL2: LSCDRIFT, L=0.8, BINS=1000, HIGH_FREQUENCY_CUTOFF0=0.2, HIGH_FREQUENCY_CUTOFF1=0.4, INTERPOLATE=0\n\
A: LINE=(C, QF, L1, QD, L2, QF, L1, QD, L2)\n";

/// The test beam of the device checks and of `tests/tracking.rs`: Twiss parameters with α ≠ 0
/// in both planes, unequal emittances, 1 mm bunch length, 2e-3 momentum spread.
pub fn check_beam_spec(n: usize) -> BeamSpec {
    BeamSpec {
        x: Plane {
            beta: 4.0,
            alpha: -0.5,
            emittance: 2e-8,
        },
        y: Plane {
            beta: 2.0,
            alpha: 0.3,
            emittance: 1e-8,
        },
        sigma_s: 1e-3,
        sigma_delta: 2e-3,
        particles: n,
        seed: 42,
    }
}

fn beam(n: usize, p_central: f64) -> (Particles, Reference) {
    (gaussian(&check_beam_spec(n)), Reference::electron(p_central))
}

fn opts(passes: u32, aperture: f64, histogram: Histogram, reference: Reference) -> TrackOptions {
    TrackOptions {
        passes,
        aperture,
        histogram,
        charge: 1e-9,
        reference,
    }
}

fn gpu(program: &Program, p: &Particles, reference: Reference, opts: GpuOptions) -> Result<GpuBackend, String> {
    GpuBackend::new(program, p, reference, opts).map_err(|e| e.to_string())
}

fn options(device: usize, precise: bool, per_element: bool, histogram: Histogram, aperture: f64) -> GpuOptions {
    GpuOptions {
        device,
        precise,
        per_element,
        histogram,
        aperture,
        min_blocks: crate::gpu::DEFAULT_MIN_BLOCKS,
        roll: false,
    }
}

fn run(program: &Program, b: &mut dyn Backend, o: &TrackOptions) -> Result<Particles, String> {
    track(program, b, o, &mut |_| Ok(()), &mut |_| {})?;
    b.particles()
}

/// Largest |a − b| / RMS(a) over the six coordinates of the particles alive in both.
/// The largest difference of a coordinate between two runs, relative to that coordinate's size
/// over the surviving particles: √(mean² + RMS²), the root mean square of its values. Rounding
/// differences (the fast mode's fused multiply-adds) are relative to a value's magnitude, and the
/// path length s carries the whole line's length (its mean grows by the line length each pass
/// while its spread stays at the bunch length): measured against the spread alone, one rounding
/// of s after 20 passes of the aperture line (228 m) is 3·10⁻¹¹ of a 1 mm bunch, which says
/// nothing about the tracking (found on an H200, 2026-11-27: 8.5·10⁻¹¹ "relative to the RMS",
/// three roundings of s).
fn worst_relative(a: &Particles, b: &Particles) -> f64 {
    worst_per_coordinate(a, b).into_iter().fold(0.0, f64::max)
}

/// [`worst_relative`] of each coordinate (x, x', y, y', s, δ).
fn worst_per_coordinate(a: &Particles, b: &Particles) -> [f64; 6] {
    let ca = a.coords();
    let cb = b.coords();
    let alive: Vec<usize> = (0..a.len()).filter(|&i| a.lost_at[i] == 0 && b.lost_at[i] == 0).collect();
    let mut worst = [0.0f64; 6];
    for k in 0..6 {
        let n = alive.len() as f64;
        let rms = (alive.iter().map(|&i| ca[k][i].powi(2)).sum::<f64>() / n).sqrt().max(1e-300);
        for &i in &alive {
            worst[k] = worst[k].max((ca[k][i] - cb[k][i]).abs() / rms);
        }
    }
    worst
}

/// The beam checks of a `gpu-check` suite ([`run_all`] when the suite holds them).
/// Non-finite losses without an aperture (the open form of the run kernels, gpu.rs `generate`):
/// a FODO line with strong sextupoles, a sector bend and an exact drift, whose dynamic aperture
/// (≈ 1 cm) particles started outside leave within a few passes, overflowing (x², y'² → ∞) at
/// different elements in different passes; with NaN and ∞ particles from the start
/// ([`open_loss_beam`]).
pub const OPEN_LOSS_LINE: &str = "Q1: QUAD, L=0.3, K1=1.2\nQ2: QUAD, L=0.3, K1=-1.2\nD: DRIF, L=1.0\n\
S: SEXT, L=0.2, K2=40\nE: EDRIFT, L=0.5\nB: SBEN, L=0.5, ANGLE=0.05\n\
CELL: LINE=(Q1, D, S, E, Q2, D, B)\nOL: LINE=(4*CELL)\n";

/// Passes of the open-aperture loss check.
pub const OPEN_LOSS_PASSES: u32 = 20;

/// The beam of the open-aperture loss check: [`check_beam_spec`]'s with NaN x, ∞ s and a huge
/// y' in three particles and x = y from 2.5 cm to 1 m in 69 more, all outside the line's dynamic
/// aperture (≈ 1 cm) by enough that the pass of their loss is no matter of rounding (the fast
/// build's fused multiply-adds): on the CPU they are lost at 8 elements in passes 0–2.
pub fn open_loss_beam(n: usize) -> Particles {
    let mut p = gaussian(&check_beam_spec(n));
    p.x[11] = f64::NAN;
    p.s[12] = f64::INFINITY;
    p.yp[13] = 1e200;
    for k in 0..69 {
        let a = 10f64.powf(-1.6 + 1.6 * k as f64 / 68.0);
        p.y[100 + 7 * k] = a;
        p.x[100 + 7 * k] = a;
    }
    p
}

/// The CPU's run of the open-aperture loss check and the distinct (element, pass) of its losses.
fn open_loss_cpu(program: &Program, p: &Particles, reference: Reference) -> Result<(Particles, usize), String> {
    let o = opts(OPEN_LOSS_PASSES, f64::INFINITY, Histogram::BlockAtomic, reference);
    let mut cpu = CpuBackend {
        particles: p.clone(),
        reference,
        aperture: f64::INFINITY,
        histogram: Histogram::BlockAtomic,
    };
    let want = run(program, &mut cpu, &o)?;
    let places: std::collections::BTreeSet<(u32, u32)> = (0..want.len())
        .filter(|&i| want.lost_at[i] > 0)
        .map(|i| (want.lost_at[i], want.lost_pass[i]))
        .collect();
    Ok((want, places.len()))
}

pub fn run_suite(
    suite: Suite,
    _data: &Path,
    device: usize,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Check>, warpdrive_core::engine::Error> {
    warpdrive_core::check::part(suite, Suite::Beam, || run_all(device, log))
}

pub fn run_all(device: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, String> {
    let mut checks = Vec::new();
    let program = Program::compile(&parse(ALL_KINDS, "all-kinds.lte", None).map_err(|e| e.to_string())?);
    let (mut p, reference) = beam(200_000, 1000.0);
    p.x[11] = f64::NAN;
    p.s[12] = f64::INFINITY;
    let aperture = 1.2e-3;
    log("beam: map tracking, GPU vs CPU");
    let o = opts(3, aperture, Histogram::BlockAtomic, reference);
    let mut cpu = CpuBackend {
        particles: p.clone(),
        reference,
        aperture,
        histogram: Histogram::BlockAtomic,
    };
    let want = run(&program, &mut cpu, &o)?;
    let lost = want.lost_at.iter().filter(|&&l| l > 0).count();
    for (precise, per_element) in [(true, false), (true, true), (false, false)] {
        let mut g = gpu(
            &program,
            &p,
            reference,
            options(device, precise, per_element, Histogram::BlockAtomic, aperture),
        )?;
        let got = run(&program, &mut g, &o)?;
        let same_flags = got.lost_at == want.lost_at && got.lost_pass == want.lost_pass;
        let worst = worst_relative(&want, &got);
        // Bit for bit, NaN particles included.
        let bits = |q: &Particles| -> Vec<u64> { q.coords().iter().flat_map(|c| c.iter().map(|v| v.to_bits())).collect() };
        let identical = bits(&got) == bits(&want) && same_flags;
        let mode = format!(
            "{}{}",
            if precise { "precise" } else { "fast" },
            if per_element { ", one launch per element" } else { ", fused runs" }
        );
        let passed = same_flags && if precise { identical } else { worst <= 1e-12 };
        checks.push(Check {
            name: format!("beam maps GPU = CPU ({mode})"),
            passed,
            detail: format!(
                "{} particles × 3 passes through {} elements (all kinds, aperture {aperture} m): {lost} lost on the CPU, loss flags identical: {same_flags}; bit-identical: {identical}; max |Δ|/size of a coordinate = {worst:.3e} (bound: 0 precise, 1e-12 fast); {} launches",
                p.len(),
                program.names.len(),
                g.timing.launches
            ),
        });
    }

    for (what, name, line, elements) in [
        (
            "MAXAMP (rectangular, elliptical), RCOL, ECOL",
            "beam apertures",
            APERTURE_LINE,
            &["MA", "ME", "RC", "EC"][..],
        ),
        (
            "OPEN_SIDE (MAXAMP +x, RCOL -y, ECOL -x, ECOL +y inverted), INVERT (RCOL, ECOL)",
            "beam open and inverted apertures",
            OPEN_APERTURE_LINE,
            &["MO", "RO", "RI", "EO", "EI"][..],
        ),
    ] {
        log(&format!("beam: apertures {what}, GPU vs CPU"));
        let ap_program = Program::compile(&parse(line, "apertures.lte", None).map_err(|e| e.to_string())?);
        let (p, reference) = beam(200_000, 1000.0);
        let o = opts(20, f64::INFINITY, Histogram::BlockAtomic, reference);
        let mut cpu = CpuBackend {
            particles: p.clone(),
            reference,
            aperture: f64::INFINITY,
            histogram: Histogram::BlockAtomic,
        };
        let want = run(&ap_program, &mut cpu, &o)?;
        let by_element = |q: &Particles| {
            let mut m = std::collections::BTreeMap::<String, usize>::new();
            for &l in q.lost_at.iter().filter(|&&l| l > 0) {
                *m.entry(ap_program.names[l as usize - 1].clone()).or_default() += 1;
            }
            m
        };
        let kinds = by_element(&want);
        for precise in [true, false] {
            let mut g = gpu(
                &ap_program,
                &p,
                reference,
                options(device, precise, false, Histogram::BlockAtomic, f64::INFINITY),
            )?;
            let got = run(&ap_program, &mut g, &o)?;
            let same_flags = got.lost_at == want.lost_at && got.lost_pass == want.lost_pass;
            let bits = |q: &Particles| -> Vec<u64> { q.coords().iter().flat_map(|c| c.iter().map(|v| v.to_bits())).collect() };
            let identical = bits(&got) == bits(&want) && same_flags;
            let worst = worst_relative(&want, &got);
            // Every aperture element must have lost particles, or the check proves nothing.
            let all_act = elements.iter().all(|k| kinds.get(*k).copied().unwrap_or(0) > 0);
            let passed = all_act && same_flags && if precise { identical } else { worst <= 1e-12 };
            checks.push(Check {
                name: format!("{name} GPU = CPU ({})", if precise { "precise" } else { "fast" }),
                passed,
                detail: format!(
                    "{} particles × 20 passes, {what}: lost on the CPU by element {kinds:?}, on the GPU {:?}; loss element and pass identical: {same_flags}; bit-identical: {identical}; max |Δ|/size of a coordinate = {worst:.3e} (bound: 0 precise, 1e-12 fast)",
                    p.len(),
                    by_element(&got)
                ),
            });
        }
    }

    log("beam: non-finite losses without an aperture (open run kernels), GPU vs CPU");
    let open_program = Program::compile(&parse(OPEN_LOSS_LINE, "open-loss.lte", None).map_err(|e| e.to_string())?);
    let reference = Reference::electron(1000.0);
    let p = open_loss_beam(200_000);
    let (want, places) = open_loss_cpu(&open_program, &p, reference)?;
    let lost = want.lost_at.iter().filter(|&&l| l > 0).count();
    let o = opts(OPEN_LOSS_PASSES, f64::INFINITY, Histogram::BlockAtomic, reference);
    for (precise, roll) in [(true, false), (false, false), (true, true)] {
        let mut g = gpu(
            &open_program,
            &p,
            reference,
            GpuOptions {
                roll,
                ..options(device, precise, false, Histogram::BlockAtomic, f64::INFINITY)
            },
        )?;
        let got = run(&open_program, &mut g, &o)?;
        let same_flags = got.lost_at == want.lost_at && got.lost_pass == want.lost_pass;
        let bits = |q: &Particles| -> Vec<u64> { q.coords().iter().flat_map(|c| c.iter().map(|v| v.to_bits())).collect() };
        let identical = bits(&got) == bits(&want) && same_flags;
        let worst = worst_relative(&want, &got);
        // The losses must spread over elements and passes, or the check proves little.
        let passed = places >= 10 && lost >= 72 && same_flags && if precise { identical } else { worst <= 1e-12 };
        checks.push(Check {
            name: format!(
                "beam open-aperture losses GPU = CPU ({}{})",
                if precise { "precise" } else { "fast" },
                if roll { ", cells as loops" } else { "" }
            ),
            passed,
            detail: format!(
                "{} particles × {OPEN_LOSS_PASSES} passes without an aperture (the run kernel without a test after every element, and the particles that end a pass non-finite tracked again with it): {lost} lost on the CPU at {places} distinct (element, pass), must be ≥ 10; loss element and pass identical: {same_flags}; bit-identical (coordinates at loss included): {identical}; max |Δ|/size of a coordinate = {worst:.3e} (bound: 0 precise, 1e-12 fast)",
                p.len()
            ),
        });
    }

    log("beam: RF cavity (RFCA), GPU vs CPU");
    let rf_lattice = parse(RF_LINE, "rf.lte", None).map_err(|e| e.to_string())?;
    let (p, reference) = (gaussian(&check_beam_spec(200_000)), rf_reference());
    let rf_program = Program::compile_with(&rf_lattice, Some(&reference));
    let o = opts(100, f64::INFINITY, Histogram::BlockAtomic, reference);
    let mut cpu = CpuBackend {
        particles: p.clone(),
        reference,
        aperture: f64::INFINITY,
        histogram: Histogram::BlockAtomic,
    };
    let want = run(&rf_program, &mut cpu, &o)?;
    // Only the cavity changes δ on this line: the check proves something only if it did.
    let moved = want.delta.iter().zip(&p.delta).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    for precise in [true, false] {
        let mut g = gpu(
            &rf_program,
            &p,
            reference,
            options(device, precise, false, Histogram::BlockAtomic, f64::INFINITY),
        )?;
        let got = run(&rf_program, &mut g, &o)?;
        let same_flags = got.lost_at == want.lost_at && got.lost_pass == want.lost_pass;
        let worst = worst_relative(&want, &got);
        let bits = |q: &Particles| -> Vec<u64> { q.coords().iter().flat_map(|c| c.iter().map(|v| v.to_bits())).collect() };
        let identical = bits(&got) == bits(&want);
        let per = worst_per_coordinate(&want, &got);
        let differ = (0..p.len()).filter(|&i| got.delta[i].to_bits() != want.delta[i].to_bits()).count();
        // Precise: IEEE operations as on the CPU but the kick's sine, CUDA's, which differs from
        // libm's by an ulp and now and then changes the rounding of the energy it is added to
        // (0.2 % of the particles on an H200): those particles must stay under 1 %. Once a
        // particle's bits differ, and in the fast mode (fused multiply-adds) for every particle,
        // the difference is set by the conditioning of the arrival time: the cavity takes it as
        // t − t_ref with t = s/(βc) ≈ 9 µs after 100 passes, so one ulp of t (1.7·10⁻²¹ s) is
        // 5·10⁻¹² rad of RF phase, a δ error of ≈ 10⁻¹⁴ per pass (5·10⁻¹² of δ's size), and it
        // reaches x through the dispersion. 1e-8 of a coordinate's size is ~2 000 such
        // roundings per particle: ELEGANT's s convention, the same on the CPU, not GPU arithmetic
        // (measured 2026-11-27, H200: precise 1.8·10⁻⁹, fast 3.1·10⁻⁹, docs/validation/beam.md).
        let bound = 1e-8;
        let few = if precise { differ * 100 < p.len() } else { true };
        let passed = same_flags && moved > 1e-4 && few && worst <= bound;
        checks.push(Check {
            name: format!("beam RF cavity GPU = CPU ({})", if precise { "precise" } else { "fast" }),
            passed,
            detail: format!(
                "{} particles × 100 passes, FODO ring with bends and one RFCA (1 MV, 500 MHz, 180°): largest change of δ on the CPU {moved:.3e} (must exceed 1e-4); loss flags identical: {same_flags}; bit-identical: {identical} ({differ} particles' δ differ); max |Δ|/size of a coordinate = {worst:.3e} (x, x', y, y', s, δ: {per:?}) (bound {bound:e}, the arrival time's conditioning; precise: fewer than 1 % of the particles differ)",
                p.len()
            ),
        });
    }

    log("beam: kick–drift integrators (CSBEND, KQUAD, KSEXT, KOCT), GPU vs CPU");
    let kick_program = Program::compile(&parse(KICK_LINE, "kicks.lte", None).map_err(|e| e.to_string())?);
    let kicks = kick_program
        .runs()
        .flat_map(|r| r.iter())
        .filter(|it| matches!(it, crate::program::RunItem::Kick { .. }))
        .count();
    let passes = 20;
    let (p, reference) = beam(200_000, 1000.0);
    let o = opts(passes, f64::INFINITY, Histogram::BlockAtomic, reference);
    let mut cpu = CpuBackend {
        particles: p.clone(),
        reference,
        aperture: f64::INFINITY,
        histogram: Histogram::BlockAtomic,
    };
    let want = run(&kick_program, &mut cpu, &o)?;
    let alive = want.lost_at.iter().filter(|&&l| l == 0).count();
    // The bound. Precise: every operation is IEEE as on the CPU but asin (CUDA: ≤ 2 ulp, glibc:
    // < 1 ulp, so ≤ 3 ulp apart), called twice per dipole arc and per wedge: (2 arcs × 3 weights
    // × 8 steps of the combined-function bend + 2 wedges of its edges E1, E2 + 1 arc of the plain
    // one) × 2 per cell, 4 cells: 408 per pass. Each rounding moves a
    // coordinate by ≤ 3 ulp of its size, and the linear optics carry it on with a gain ≲ 10
    // (β ratio of the ring); summed linearly over 20 passes: 408 × 20 × 3 × 2⁻⁵² × 10 = 5.4e-11
    // of a coordinate's size. Fast (FMA contraction): every operation may round differently,
    // ≈ 40 per arc or kick, so 40 × that.
    let asin_calls = 408.0 * f64::from(passes);
    let ulp = f64::EPSILON;
    for precise in [true, false] {
        let mut g = gpu(
            &kick_program,
            &p,
            reference,
            options(device, precise, false, Histogram::BlockAtomic, f64::INFINITY),
        )?;
        let got = run(&kick_program, &mut g, &o)?;
        let same_flags = got.lost_at == want.lost_at && got.lost_pass == want.lost_pass;
        let worst = worst_relative(&want, &got);
        let per = worst_per_coordinate(&want, &got);
        let bits = |q: &Particles| -> Vec<u64> { q.coords().iter().flat_map(|c| c.iter().map(|v| v.to_bits())).collect() };
        let identical = bits(&got) == bits(&want);
        let bound = asin_calls * 3.0 * ulp * 10.0 * if precise { 1.0 } else { 40.0 };
        let passed = kicks == 4 * 7 && alive * 2 > p.len() && same_flags && worst <= bound;
        checks.push(Check {
            name: format!("beam kick-drift integrators GPU = CPU ({})", if precise { "precise" } else { "fast" }),
            passed,
            detail: format!(
                "{} particles × {passes} passes, FODO ring of CSBEND, KQUAD, KSEXT, KOCT ({kicks} integrated elements, must be 28; {alive} alive on the CPU, must be > half): loss flags identical: {same_flags}; bit-identical: {identical}; max |Δ|/size of a coordinate = {worst:.3e} (x, x', y, y', s, δ: {per:?}) (bound {bound:.1e}: asin's ≤ 3 ulp{} × {asin_calls} calls × optics gain 10)",
                p.len(),
                if precise { "" } else { " × 40 FMA roundings" }
            ),
        });
    }

    log("beam: LSC histograms and tracking, GPU vs CPU");
    let lsc_program = Program::compile(&parse(LSC_LINE, "lsc.lte", None).map_err(|e| e.to_string())?);
    let (q, reference) = beam(1_000_003, 200.0);
    let t: Vec<f64> = (0..q.len())
        .map(|i| lsc::time_of(q.s[i], q.delta[i], reference.p_central))
        .collect();
    let (lo, hi) = t.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |a, &v| (a.0.min(v), a.1.max(v)));
    for bins in [256usize, 1000, 5000] {
        let keys = lsc::bin_indices(&t, &vec![true; q.len()], lo, (hi - lo) / bins as f64, bins);
        let cpu_h: Vec<u64> = lsc::histogram(&keys, bins, Histogram::Sort);
        let mut detail = String::new();
        let mut passed = true;
        for h in Histogram::ALL {
            // Precise: IEEE t on both sides, so no particle can sit on a different bin edge.
            let mut g = gpu(&lsc_program, &q, reference, options(device, true, false, h, f64::INFINITY))?;
            let got = g.charge_histogram(bins).map_err(|e| e.to_string())?;
            let same = got.iter().map(|&c| u64::from(c)).eq(cpu_h.iter().copied());
            passed &= same;
            detail += &format!("{}: {}; ", h.name(), if same { "identical" } else { "DIFFERENT" });
        }
        checks.push(Check {
            name: format!("beam LSC histogram strategies = CPU ({bins} bins)"),
            passed,
            detail: format!("{} particles: {detail}", q.len()),
        });
    }
    let o = opts(1, f64::INFINITY, Histogram::BlockAtomic, reference);
    let mut cpu = CpuBackend {
        particles: q.clone(),
        reference,
        aperture: f64::INFINITY,
        histogram: Histogram::BlockAtomic,
    };
    let want = run(&lsc_program, &mut cpu, &o)?;
    for precise in [true, false] {
        let mut g = gpu(
            &lsc_program,
            &q,
            reference,
            options(device, precise, false, Histogram::BlockAtomic, f64::INFINITY),
        )?;
        let got = run(&lsc_program, &mut g, &o)?;
        // The LSC part of δ: its change from the map-only line, for the scale of FFT rounding.
        let kick_scale = {
            let n = want.len() as f64;
            let m = (0..want.len()).map(|i| want.delta[i] - q.delta[i]).sum::<f64>() / n;
            ((0..want.len()).map(|i| (want.delta[i] - q.delta[i] - m).powi(2)).sum::<f64>() / n).sqrt()
        };
        let worst_delta = (0..want.len()).map(|i| (want.delta[i] - got.delta[i]).abs()).fold(0.0f64, f64::max);
        let worst = worst_relative(&want, &got);
        let fft = g.fft_fallback().map_or("cuFFT".to_string(), |w| format!("host FFT ({w})"));
        let passed = worst_delta <= 1e-9 * kick_scale && worst <= 1e-9 && g.fft_fallback().is_none();
        checks.push(Check {
            name: format!("beam LSC tracking GPU = CPU ({})", if precise { "precise" } else { "fast" }),
            passed,
            detail: format!(
                "{} particles, 2 × 4 quadrupoles + LSCDRIFTs (256 bins; 1000 bins with a high-frequency filter and no interpolation), {fft}: RMS of the LSC change of δ {kick_scale:.3e}, max |Δδ| {worst_delta:.3e} (bound 1e-9 of it), max |Δ|/size of a coordinate {worst:.3e} (bound 1e-9)",
                q.len()
            ),
        });
    }
    Ok(checks)
}

#[cfg(test)]
mod tests {
    /// The every-kind line parses and its map kernels are generated (CI compiles them with
    /// NVRTC through `doctor_sources`, which would skip a line that failed here).
    #[test]
    fn every_kind_line_generates_kernels() {
        let names: Vec<String> = crate::gpu::doctor_sources().into_iter().map(|s| s.0).collect();
        assert!(names.contains(&"beam_maps_all_kinds.cu".to_string()), "{names:?}");
        assert!(names.contains(&"beam_maps_apertures.cu".to_string()), "{names:?}");
    }

    /// Rolling folds the ring's repeated cells into one loop with the element numbers of every
    /// cell, keeps single items single, and leaves the unrolled source unchanged otherwise.
    #[test]
    fn repeated_cells_become_loops() {
        use super::*;
        use crate::gpu::{roll, Block, Shape};
        let lattice = parse(RF_LINE, "rf.lte", None).unwrap();
        let program = Program::compile_with(&lattice, Some(&rf_reference()));
        let flat = crate::gpu::generate(&program, Shape::new(true)).unwrap();
        let rolled = crate::gpu::generate(
            &program,
            Shape {
                roll: true,
                ..Shape::new(true)
            },
        )
        .unwrap();
        assert_eq!(flat.constants, rolled.constants);
        // RF, then 4 cells of 8 elements: one loop in the open passes and one in the checked ones.
        assert_eq!(
            rolled.source.matches("for (unsigned c = 0; c < 4; ++c) {").count(),
            2,
            "{}",
            rolled.source
        );
        assert!(rolled.source.contains("CHECK(2 + 8 * c);") && rolled.source.contains("CHECK(9 + 8 * c);"));
        assert!(!flat.source.contains("unsigned c = 0") && flat.source.contains("CHECK(33);"));
        let body: Vec<(String, usize)> = ["a", "r", "b", "c", "b", "c", "b", "c", "z"]
            .iter()
            .enumerate()
            .map(|(k, s)| (s.to_string(), k + 1))
            .collect();
        // Too short a repetition (6 items; 8 at least) stays inline; a longer one is a loop.
        assert!(roll(&body).iter().all(|b| matches!(b, Block::One(_))));
        let long: Vec<(String, usize)> = (0..20).map(|k| (["p", "q"][k % 2].to_string(), 3 * k + 1)).collect();
        assert_eq!(
            roll(&long),
            vec![Block::Loop {
                start: 0,
                period: 2,
                reps: 10,
                stride: 6
            }]
        );
        // Equal calls whose element numbers do not advance evenly are not one loop.
        let uneven: Vec<(String, usize)> = (0..20).map(|k| ("p".to_string(), k * k + 1)).collect();
        assert!(roll(&uneven).iter().all(|b| matches!(b, Block::One(_))));
    }

    /// The open-aperture loss check's line loses particles at many elements in many passes on
    /// the CPU (so the GPU check can tell a wrong loss place), and its run gets the open form of
    /// the kernel (no test after every element) when tracked without an aperture.
    #[test]
    fn open_loss_line_loses_along_the_line_and_gets_the_open_kernel() {
        use super::*;
        let program = Program::compile(&parse(OPEN_LOSS_LINE, "open-loss.lte", None).unwrap());
        let p = open_loss_beam(2_000);
        let (want, places) = open_loss_cpu(&program, &p, Reference::electron(1000.0)).unwrap();
        let lost: Vec<(usize, u32, u32)> = (0..want.len())
            .filter(|&i| want.lost_at[i] > 0)
            .map(|i| (i, want.lost_at[i], want.lost_pass[i]))
            .collect();
        let passes: std::collections::BTreeSet<u32> = lost.iter().map(|l| l.2).collect();
        assert!(places >= 10 && passes.len() >= 3, "{lost:?}");
        // NaN x: lost at the first element, pass 0; of the others exactly those started outside
        // the dynamic aperture.
        assert_eq!((want.lost_at[11], want.lost_pass[11]), (1, 0));
        assert_eq!(lost.len(), 3 + 69, "{lost:?}");
        assert!(lost
            .iter()
            .all(|&(i, _, _)| i == 11 || i == 12 || i == 13 || (i >= 100 && (i - 100) % 7 == 0)));
        let open = crate::gpu::generate(&program, crate::gpu::Shape::new(true)).unwrap();
        let checked = crate::gpu::generate(&program, crate::gpu::Shape::new(false)).unwrap();
        assert!(open.source.contains("goto recheck;") && !checked.source.contains("goto recheck;"));
    }
}
