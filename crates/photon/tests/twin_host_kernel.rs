//! `--precise`'s GPU twin built for the host (issue #29): propagate.cu's device code, with the
//! switches of `gpu::precise_options` and the run's features, compiled as C++ without contraction
//! (`-ffp-contract=off`: the arithmetic of a GPU build with `--fmad=false`), fed the kernel's own
//! params (`gpu::params`, its tables in one host buffer) and run photon by photon (`start`, then
//! `step` until the photon ends: the plain loop, `WD_NAIVE_LOOP`'s body). Its hits are compared
//! with the CPU twin's (`fast::twin::run_rounded`), field by field, bit for bit:
//! * the precise build's switches against `Twin<Plain>`;
//! * with WD_TWIN_FMA_GEOM against `Twin<FusedGeom>`;
//! * the exact precise build (`GpuOptions { precise: true }`) against `propagate::run`.
//!
//! So the twin's code is the same computation on both sides, photon for photon, up to what only a
//! GPU does: contraction where NVRTC chooses (today's `--precise` has `--fmad=true`) and CUDA's own
//! libm where the twin calls it. Those are measured on a device (scripts/photon-twin-contraction).
//!
//! Needs a C++ compiler (`c++`, or `$CXX`); skipped without one unless `WARPDRIVE_REQUIRE_DATA=1`.

mod host_cxx;

use host_cxx::{compile, piece};
use std::path::Path;
use std::process::Command;
use warpdrive_core::progress::Progress;
use warpdrive_photon::detector::{Detector, DetectorOptions};
use warpdrive_photon::f2k::parse_f2k;
use warpdrive_photon::fast::twin::{run_rounded, Rounding};
use warpdrive_photon::gpu::{self, GpuError, GpuHit, GpuParams, KernelFeatures, TableSink};
use warpdrive_photon::gpu_check::{bit_identical_photons, flasher_cases, photon_agreement};
use warpdrive_photon::propagate::RawHit;
use warpdrive_photon::source::{realise, total_photons, Source};

const KERNEL: &str = include_str!("../kernels/propagate.cu");

/// The tables in one buffer, each at a 16-byte aligned offset; the addresses returned are
/// `base` + offset.
struct HostSink {
    base: u64,
    blob: Vec<u8>,
}

impl HostSink {
    fn put(&mut self, bytes: &[u8]) -> u64 {
        while !self.blob.len().is_multiple_of(16) {
            self.blob.push(0);
        }
        let at = self.blob.len() as u64;
        // At least one element, as the device's tables (no zero-length allocation).
        self.blob.extend_from_slice(bytes);
        self.blob.extend_from_slice(&[0u8; 16]);
        self.base + at
    }
}

macro_rules! host_put {
    ($name:ident, $t:ty) => {
        fn $name(&mut self, v: &[$t]) -> Result<u64, GpuError> {
            Ok(self.put(&v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>()))
        }
    };
}

impl TableSink for HostSink {
    host_put!(f32s, f32);
    host_put!(f64s, f64);
    host_put!(u32s, u32);
    host_put!(i32s, i32);
    host_put!(u64s, u64);
}

fn words(p: &GpuParams) -> Vec<u64> {
    let n = std::mem::size_of::<GpuParams>() / 8;
    // SAFETY: GpuParams is repr(C), Copy, 8-byte aligned, a whole number of u64 words (832 bytes,
    // checked by the kernel's static_assert), fields of 4 and 8 bytes with explicit padding.
    unsafe { std::slice::from_raw_parts((p as *const GpuParams).cast::<u64>(), n) }.to_vec()
}

/// The host program: the CUDA built-ins the device code uses, the kernel's source up to its
/// kernels, and a main that runs the photons of the params it reads.
fn source() -> String {
    let pre = r#"#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __grid_constant__
#define __launch_bounds__(a, b)
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
struct uint2 { unsigned int x, y; };
struct uint4 { unsigned int x, y, z, w; };
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned int)(((unsigned long long)a * b) >> 32); }
static inline unsigned int __float_as_uint(float x) { unsigned int u; memcpy(&u, &x, 4); return u; }
static inline float __uint_as_float(unsigned int u) { float x; memcpy(&x, &u, 4); return x; }
static inline int __float_as_int(float x) { int u; memcpy(&u, &x, 4); return u; }
static inline float __int_as_float(int u) { float x; memcpy(&x, &u, 4); return x; }
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { unsigned long long o = *p; *p += v; return o; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
"#;
    let body = piece(KERNEL, "", "#if defined(WD_NAIVE_LOOP)");
    let main = r#"
int main(int argc, char** argv) {
    // argv: params file, blob file, pointer words file, hit capacity.
    PhotonParams P;
    FILE* f = fopen(argv[1], "rb");
    if (fread(&P, sizeof P, 1, f) != 1) return 2;
    fclose(f);
    f = fopen(argv[2], "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    std::vector<double> blob(n / 8 + 2);  // 8-byte aligned
    if (n > 0 && fread(blob.data(), 1, n, f) != (size_t)n) return 3;
    fclose(f);
    unsigned long long* w = (unsigned long long*)&P;
    f = fopen(argv[3], "r");
    int k;
    while (fscanf(f, "%d", &k) == 1) w[k] = w[k] - 16 + (unsigned long long)blob.data();
    fclose(f);
    unsigned long long cap = strtoull(argv[4], nullptr, 10), count[2] = {0, 0};
    std::vector<GpuHit> hits(cap);
    P.hits = hits.data();
    P.hit_count = count;
    P.hit_capacity = cap;
    for (unsigned long long id = P.photon_lo; id < P.photon_hi; ++id) {
        PState st;
        start(P, id, st);
        while (step(P, st)) {}
    }
    if (count[0] > cap) return 4;
    fwrite(hits.data(), sizeof(GpuHit), count[0], stdout);
    return 0;
}
"#;
    format!("{pre}{body}{main}")
}

fn detector(model: &str) -> Detector {
    let data = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")).expect("the shared data (WARPDRIVE_DATA)");
    Detector::build(&DetectorOptions {
        ice_dir: Some(data.join("ice").join(model)),
        ..Default::default()
    })
    .unwrap()
}

/// The C++ compiler's flag for a build without contraction (the arithmetic of `--fmad=false`).
const NO_CONTRACTION: &str = "-ffp-contract=off";

/// `--precise`'s options with the switch of rounding `r`.
fn twin_options(r: Rounding) -> gpu::GpuOptions {
    let mut o = gpu::precise_options(vec![0]);
    let switches: Vec<&str> = [Rounding::Fused, Rounding::FusedGeom].iter().filter_map(|r| r.switch()).collect();
    o.defines.retain(|d| !switches.contains(&d.as_str()));
    o.defines.extend(r.switch().map(String::from));
    o
}

/// The hits of the host build of the kernel with the switches of `opts` and the run's features
/// (None: no C++ compiler); `contract` is the C++ compiler's contraction flag (`-march=native`
/// added to any but [`NO_CONTRACTION`], for the CPU's FMA).
fn host_hits(dir: &Path, det: &Detector, sources: &[Source], seed: u64, opts: &gpu::GpuOptions, contract: &str) -> Option<Vec<RawHit>> {
    let (m, idx) = (&det.medium, &det.index);
    let defines = gpu::kernel_defines(opts, KernelFeatures::of(m, idx, sources));
    let defines: Vec<&str> = defines.iter().map(String::as_str).collect();
    let (cpp, exe) = (dir.join("kernel.cpp"), dir.join("kernel"));
    std::fs::write(&cpp, source()).unwrap();
    let include = format!("-I{}/../core/kernels", env!("CARGO_MANIFEST_DIR"));
    let mut flags = vec!["-O2", "-std=c++17", contract, "-w", &include];
    if contract != NO_CONTRACTION {
        flags.push("-march=native");
    }
    if !compile(&cpp, &exe, &flags, &defines) {
        return None;
    }
    // The params twice, at two bases: the words that move with the base are the pointers.
    let (mut a, mut b) = (
        HostSink {
            base: 16,
            blob: Vec::new(),
        },
        HostSink {
            base: 1 << 40,
            blob: Vec::new(),
        },
    );
    let mut p = gpu::params(m, idx, sources, &mut a).unwrap();
    let q = gpu::params(m, idx, sources, &mut b).unwrap();
    let (wp, wq) = (words(&p), words(&q));
    let ptrs: Vec<String> = (0..wp.len())
        .filter(|&i| wq[i].wrapping_sub(wp[i]) == (1 << 40) - 16)
        .map(|i| i.to_string())
        .collect();
    assert!(ptrs.len() > 20, "pointer fields found: {}", ptrs.len());
    p.seed = seed;
    p.photon_lo = 0;
    p.photon_hi = total_photons(sources).unwrap();
    let bytes: Vec<u8> = words(&p).iter().flat_map(|w| w.to_ne_bytes()).collect();
    let (pf, bf, wf) = (dir.join("params.bin"), dir.join("blob.bin"), dir.join("ptrs.txt"));
    std::fs::write(&pf, bytes).unwrap();
    std::fs::write(&bf, &a.blob).unwrap();
    std::fs::write(&wf, ptrs.join("\n")).unwrap();
    let o = Command::new(&exe).args([&pf, &bf, &wf]).arg("4000000").output().unwrap();
    assert!(
        o.status.success(),
        "host kernel: {:?} {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let size = std::mem::size_of::<GpuHit>();
    assert_eq!(o.stdout.len() % size, 0);
    Some(
        o.stdout
            .chunks(size)
            .map(|c| {
                let u = |k: usize| u32::from_ne_bytes(c[k..k + 4].try_into().unwrap());
                let f = |k: usize| f32::from_bits(u(k));
                RawHit {
                    photon: u64::from_ne_bytes(c[0..8].try_into().unwrap()),
                    source: u(8),
                    seq: u(12),
                    dom: u(16),
                    time: f(20),
                    slice: u(24),
                    dir: [f(28), f(32), f(36)],
                    impact: [f(40), f(44), f(48)],
                }
            })
            .collect(),
    )
}

/// Photons with hits whose hits differ, in any field, between the host build of rounding `host`
/// (without contraction) and the CPU twin of rounding `cpu` (None: no C++ compiler).
#[allow(clippy::too_many_arguments)]
fn differing(dir: &Path, det: &Detector, sources: &[Source], seed: u64, host: Rounding, cpu: Rounding, label: &str) -> Option<usize> {
    let h = host_hits(dir, det, sources, seed, &twin_options(host), NO_CONTRACTION)?;
    let c = run_rounded(cpu, &det.medium, &det.index, sources, seed, 0..u64::MAX, &Progress::hidden());
    let (_, photons) = photon_agreement(&c, &h);
    let differ = photons - bit_identical_photons(&c, &h);
    eprintln!(
        "{label}: {differ} of {photons} photons with hits differ; hits host {}, CPU {}",
        h.len(),
        c.len()
    );
    Some(differ)
}

#[test]
fn precise_kernel_on_the_host_is_the_cpu_twin() {
    let dir = std::env::temp_dir().join(format!("wd-twin-kernel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let seed = 20261203;
    // A 1 TeV cascade in a model without and one with birefringence, the same in gpu-check's two
    // hole-ice models (columns of 2 DOM radii in spice_3.2.1, of 1 with birefringence in
    // spice_ftp-v3m: WD_HOLE), a cascade among multi-PMT modules, and the precise flasher case
    // nearest its threshold on the device (the lab-profile LED ring with its cable; 10⁷ photons).
    let text = "EM 1 1 1970 0 0 0\nTR 1 0 e 0 0 -400 180 0 0 1000 0\nEE\n";
    let mut cases = Vec::new();
    let data = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")).expect("the shared data (WARPDRIVE_DATA)");
    let holes = warpdrive_photon::gpu_check::hole_models(&data).unwrap();
    let mut dirs: Vec<(String, std::path::PathBuf)> = ["spice_3.2.1", "spice_ftp-v3m"]
        .iter()
        .map(|m| ((*m).to_string(), data.join("ice").join(m)))
        .collect();
    dirs.push(("spice_3.2.1 + hole ice".into(), holes[0].clone()));
    dirs.push(("spice_ftp-v3m + hole ice".into(), holes[1].clone()));
    for (model, ice) in dirs {
        let det = Detector::build(&DetectorOptions {
            ice_dir: Some(ice),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(det.medium.hole.is_some(), model.contains("hole"), "{model}");
        let specs = parse_f2k(Path::new("cascade.f2k"), text, &det.yield_).unwrap().specs;
        cases.push((format!("cascade, {model}"), realise(&specs, seed), det));
    }
    for h in &holes {
        let _ = std::fs::remove_dir_all(h);
    }
    // Multi-PMT modules with their own shapes (WD_SHAPES): the Upgrade geometry with the example's
    // sensor files (tests/sensors.rs), a 100 GeV cascade among them.
    let det = Detector::build(&DetectorOptions {
        ice_dir: Some(data.join("ice/spice_3.2.1")),
        geometry: Some(data.join("geometry/prometheus_upgrade.geo")),
        sensors: Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/photon/upgrade-sensors")),
        ..Default::default()
    })
    .unwrap();
    assert!(KernelFeatures::of(&det.medium, &det.index, &[]).shapes, "the modules' shapes");
    let specs = parse_f2k(Path::new("cascade.f2k"), "TR 1 0 e 25 -35 -356 90 0 0 100 0\n", &det.yield_)
        .unwrap()
        .specs;
    cases.push(("cascade, Upgrade multi-PMT modules".into(), realise(&specs, seed), det));
    for (label, model, string, opts) in flasher_cases().into_iter().filter(|c| c.0.contains("cable")) {
        let det = detector(model);
        let specs = warpdrive_photon::f2k::flasher(&det, string, 20, 1e7, &opts).unwrap();
        cases.push((format!("flasher {string}-20, {model} ({label})"), realise(&specs, seed), det));
    }
    for (label, sources, det) in &cases {
        let Some(plain) = differing(
            &dir,
            det,
            sources,
            seed,
            Rounding::Plain,
            Rounding::Plain,
            &format!("{label}, plain"),
        ) else {
            return;
        };
        let fused = differing(
            &dir,
            det,
            sources,
            seed,
            Rounding::FusedGeom,
            Rounding::FusedGeom,
            &format!("{label}, fused"),
        )
        .unwrap();
        assert_eq!((plain, fused), (0, 0), "{label}: photons whose hits differ (plain, fused)");
    }
    // The control: the fused host build against the plain CPU twin differs (a comparison that
    // could not see the roundings would pass the above however the two sides computed).
    let (_, sources, det) = &cases[1];
    let control = differing(
        &dir,
        det,
        sources,
        seed,
        Rounding::FusedGeom,
        Rounding::Plain,
        "control: fused host vs plain CPU",
    )
    .unwrap();
    assert!(control > 0, "the fused build gives the plain twin's hits bit for bit");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Measurement (`--ignored`, minutes): the host build with the C++ compiler's own contraction
/// (`-ffp-contract=fast -march=native`: GCC chooses where to fuse, as NVRTC does with
/// `--fmad=true`, not necessarily at the same places) against the CPU twin, by gpu-check's
/// criterion, on gpu-check's cases: how much contraction alone moves photons, next to the
/// device's numbers for today's `--precise` (session 29, call 6: 99.982 / 99.687 / 99.735 % on the
/// 10 TeV cascade, 98.991 % on the lab LED ring with its cable).
#[test]
#[ignore]
fn measure_contracted_host_build() {
    let dir = std::env::temp_dir().join(format!("wd-twin-kernel-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")).unwrap();
    let input = data.join("reference/ppc_h100_2026/input_cascade_10TeV.f2k");
    let text = std::fs::read_to_string(&input).unwrap();
    let mut cases = Vec::new();
    for model in ["spice_3.2.1", "spice_ftp-v3m", "spice_bfr-v2"] {
        let det = detector(model);
        let specs = parse_f2k(&input, &text, &det.yield_).unwrap().specs;
        cases.push((format!("cascade 10 TeV, {model}"), realise(&specs, 20261122), 20261122, det));
    }
    for (label, model, string, opts) in flasher_cases().into_iter().filter(|c| c.0.contains("cable")) {
        let det = detector(model);
        let specs = warpdrive_photon::f2k::flasher(&det, string, 20, 1e8, &opts).unwrap();
        cases.push((
            format!("flasher {string}-20, {model} ({label})"),
            realise(&specs, 20261125),
            20261125,
            det,
        ));
    }
    for (label, sources, seed, det) in &cases {
        let cpu = run_rounded(
            Rounding::Plain,
            &det.medium,
            &det.index,
            sources,
            *seed,
            0..u64::MAX,
            &Progress::hidden(),
        );
        for contract in [NO_CONTRACTION, "-ffp-contract=fast"] {
            let host = host_hits(&dir, det, sources, *seed, &twin_options(Rounding::Plain), contract).unwrap();
            let (same, total) = photon_agreement(&cpu, &host);
            eprintln!(
                "{label}, host {contract}: {same} of {total} photons with hits the same ({:.3} %)",
                100.0 * same as f64 / total.max(1) as f64
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The exact precise build (`GpuOptions { precise: true }`: the exact tilt, the full ice tables,
/// Philox per segment, the C library's functions) built for the host without contraction equals
/// the CPU's exact path `propagate::run`, which gpu-check compares it with on a device, hit for
/// hit, bit for bit. On the host both sides call the same C library, so this checks the code's
/// twinning apart from CUDA's libm (on the device: 99.996 / 99.779 % of the photons the same).
#[test]
fn exact_kernel_on_the_host_is_propagate_run() {
    let dir = std::env::temp_dir().join(format!("wd-twin-kernel-x-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = "EM 1 1 1970 0 0 0\nTR 1 0 e 0 0 -400 180 0 0 1000 0\nEE\n";
    let seed = 20261203;
    let opts = gpu::GpuOptions {
        precise: true,
        ..Default::default()
    };
    for model in ["spice_3.2.1", "spice_ftp-v3m"] {
        let det = detector(model);
        let specs = parse_f2k(Path::new("cascade.f2k"), text, &det.yield_).unwrap().specs;
        let sources = realise(&specs, seed);
        let Some(host) = host_hits(&dir, &det, &sources, seed, &opts, NO_CONTRACTION) else {
            return;
        };
        let cpu = warpdrive_photon::propagate::run(&det.medium, &det.index, &sources, seed, &Progress::hidden());
        let (same, total) = photon_agreement(&cpu, &host);
        eprintln!(
            "exact build, {model}: {same} of {total} photons with hits the same ({:.3} %); bit for bit: {}",
            100.0 * same as f64 / total.max(1) as f64,
            host == cpu
        );
        assert!(
            total > 1000 && host == cpu,
            "{model}: the exact build's hits differ from propagate::run's"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
