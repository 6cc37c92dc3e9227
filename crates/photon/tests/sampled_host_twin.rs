//! The sampled estimator's device lookup (`kernels/sampled.cu`: `axis_bin`, `sampled_cell`)
//! compiled for the host (C++, no FMA contraction) against the Rust `tabulate::sampled::Lookup`
//! on random points, spherical and cylindrical, with equal-step axes (found by arithmetic) and an
//! azimuth axis of unequal edges (searched), with delays. The device computes in float, the CPU
//! in f64, so a point within float rounding of an edge may fall on either side: every point must
//! get the same cell except those (each mismatch's coordinates within 10⁻⁵ of an axis span of an
//! edge), and those must be under 0.1 % of the points. A wrong axis order, index formula, fold or
//! delay definition would mismatch most points.
//!
//! Needs a C++ compiler (`c++`, or `$CXX`); skipped without one unless
//! `WARPDRIVE_REQUIRE_DATA=1`.

mod host_cxx;
mod step_bins;

use host_cxx::{compile, piece};
use std::fmt::Write as _;
use std::process::Command;
use warpdrive_core::RandomStream;
use warpdrive_photon::tabulate::bins::{Binning, Frame, Shape};
use warpdrive_photon::tabulate::sampled::Lookup;

const KERNEL: &str = include_str!("../kernels/sampled.cu");
const SPLIT: &str = include_str!("../kernels/sampled_split.cu");

fn source() -> String {
    // The kernel's switches and constants (WD_SAMP_ANGC_MAX sizes SampParams), then the lookup.
    let body = [
        piece(KERNEL, "#define WD_TAG_TABULATE", "// Must match SampParams"),
        piece(KERNEL, "struct SampParams {", "// mod.rs Acceptance::weight"),
    ]
    .concat();
    let pre = "#include <cmath>\n#include <cstdio>\n#include <algorithm>\nusing std::min; using std::max;\n\
               #define __device__\n#define __forceinline__ inline\nstatic float __fdividef(float a, float b) { return a / b; }\nstruct V3 { float x, y, z; };\n";
    let main = r#"
static float* read(int n) { float* v = new float[n]; for (int i = 0; i < n; ++i) scanf("%f", &v[i]); return v; }
int main() {
    SampParams T = {};
    int n[4];
    for (int k = 0; k < 4; ++k) scanf("%d", &n[k]);
    T.n_radial = n[0]; T.n_azimuth = n[1]; T.n_polar = n[2]; T.n_delay = n[3];
    T.radial = read(n[0]); T.azimuth = read(n[1]); T.polar = read(n[2]); T.delay = read(n[3]);
    float* f = read(12 + 3 + 8);
    for (int k = 0; k < 3; ++k) { T.origin[k] = f[k]; T.axis[k] = f[3 + k]; T.e1[k] = f[6 + k]; T.e2[k] = f[9 + k]; }
    T.ng_over_c = f[12]; T.cone = f[13]; T.inv_c = f[14];
    for (int k = 0; k < 4; ++k) { T.lo[k] = f[15 + k]; T.inv[k] = f[19 + k]; }
    T.hi[0] = T.radial[n[0] - 1]; T.hi[1] = T.azimuth[n[1] - 1]; T.hi[2] = T.polar[n[2] - 1]; T.hi[3] = T.delay[n[3] - 1];
    scanf("%d %u", &T.spherical, &T.time_cells);
    T.equal_steps = T.inv[0] > 0.0f && T.inv[1] > 0.0f && T.inv[2] > 0.0f && (T.n_delay == 0 || T.inv[3] > 0.0f);
    int m; scanf("%d", &m);
    for (int i = 0; i < m; ++i) {
        float x, y, z, t; scanf("%f %f %f %f", &x, &y, &z, &t);
        printf("%d\n", sampled_cell(T, V3{x, y, z}, t));
    }
}
"#;
    format!("{pre}{body}{main}")
}

/// The lookup with its first and last edges from the parameters (WD_SAMP_EDGES, the default)
/// and loaded from the edges (WD_SAMP_EDGES=0, the earlier code), and with every axis of equal
/// steps both by one range predicate (WD_SAMP_LEAN, the default) and axis by axis
/// (WD_SAMP_LEAN=0): each compared with the Rust lookup below, and with each other point by
/// point (the same cell for every point: the same floats are compared).
#[test]
fn device_lookup_is_the_rust_lookup() {
    let dir = std::env::temp_dir().join(format!("wd-sampled-twin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpp = dir.join("twin.cpp");
    std::fs::write(&cpp, source()).unwrap();
    let flags = ["-O2", "-std=c++17", "-ffp-contract=off", "-w"];
    let exes = [
        dir.join("twin"),
        dir.join("twin-loads"),
        dir.join("twin-axis-by-axis"),
        dir.join("twin-spheres"),
        dir.join("twin-cylinders"),
    ];
    // atan2f (WD_SAMP_ATAN=0) as the Rust lookup's atan2: the same floats, the same cells; the
    // polynomial azimuth (the default) is checked by `azimuth_polynomial_is_atan2` and on a GPU by
    // gpu-check's GPU = CPU comparisons.
    if !compile(&cpp, &exes[0], &flags, &["WD_SAMP_EDGES=1", "WD_SAMP_ATAN=0"])
        || !compile(&cpp, &exes[1], &flags, &["WD_SAMP_EDGES=0", "WD_SAMP_ATAN=0"])
        || !compile(&cpp, &exes[2], &flags, &["WD_SAMP_LEAN=0", "WD_SAMP_ATAN=0"])
        // The grid's shape compiled in (WD_SAMP_SHAPE, the host's build for the table's grid).
        || !compile(&cpp, &exes[3], &flags, &["WD_SAMP_SHAPE=1", "WD_SAMP_ATAN=0"])
        || !compile(&cpp, &exes[4], &flags, &["WD_SAMP_SHAPE=2", "WD_SAMP_ATAN=0"])
    {
        return;
    }
    let lin = |a: f64, b: f64, n: usize| (0..=n).map(|i| a + (b - a) * i as f64 / n as f64).collect::<Vec<_>>();
    let mut r = RandomStream::new(21, 0, 0);
    // The azimuth of unequal edges (searched) or of equal steps (then every axis is).
    let azimuths = [vec![0.0, 15.0, 60.0, 100.0, 180.0], lin(0.0, 180.0, 9)];
    for (shape, azimuth) in [Shape::Spherical, Shape::Cylindrical]
        .into_iter()
        .flat_map(|s| azimuths.iter().map(move |a| (s, a)))
    {
        let b = Binning {
            shape,
            radial: lin(0.0, 50.0, 10),
            azimuth: azimuth.clone(),
            polar: if shape == Shape::Spherical {
                lin(-1.0, 1.0, 8)
            } else {
                lin(-30.0, 40.0, 7)
            },
            delay: lin(-20.0, 300.0, 16),
        };
        // A frame whose numbers are floats already (the device gets them as floats).
        let d = [0.3f64, -0.5, 0.812];
        let nd = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let mut f = Frame::new([1.0, -2.0, -51.93], [d[0] / nd, d[1] / nd, d[2] / nd], 1.35, 1.32);
        let fl = |v: f64| f64::from(v as f32);
        f.origin = f.origin.map(fl);
        f.axis = f.axis.map(fl);
        f.e1 = f.e1.map(fl);
        f.e2 = f.e2.map(fl);
        (f.ng_over_c, f.cone, f.inv_c) = (fl(f.ng_over_c), fl(f.cone), fl(f.inv_c));
        let look = Lookup::new(&b);
        let equal = azimuth.len() == 10;
        assert!(
            look.radial.inv > 0.0 && (look.azimuth.inv > 0.0) == equal,
            "the radial axis by arithmetic, the azimuth searched or by arithmetic"
        );
        let mut input = String::new();
        let edges = [&b.radial, &b.azimuth, &b.polar, &b.delay];
        writeln!(input, "{} {} {} {}", edges[0].len(), edges[1].len(), edges[2].len(), edges[3].len()).unwrap();
        for e in edges {
            for x in e.iter() {
                write!(input, "{:e} ", *x as f32).unwrap();
            }
            writeln!(input).unwrap();
        }
        for v in [f.origin, f.axis, f.e1, f.e2] {
            for x in v {
                write!(input, "{:e} ", x as f32).unwrap();
            }
        }
        write!(input, "{:e} {:e} {:e} ", f.ng_over_c as f32, f.cone as f32, f.inv_c as f32).unwrap();
        let axes = [&look.radial, &look.azimuth, &look.polar, look.delay.as_ref().unwrap()];
        for a in axes {
            write!(input, "{:e} ", a.lo as f32).unwrap();
        }
        for a in axes {
            write!(input, "{:e} ", a.inv as f32).unwrap();
        }
        writeln!(input, "\n{} {}", i32::from(shape == Shape::Spherical), look.time_cells).unwrap();
        let n = 100_000;
        writeln!(input, "{n}").unwrap();
        let mut pts = Vec::with_capacity(n);
        for _ in 0..n {
            let mut u = || f64::from(120.0 * r.uniform() - 60.0) as f32;
            let p = [
                u() + f.origin[0] as f32,
                u() + f.origin[1] as f32,
                u() + f.origin[2] as f32,
                3.0 * u() + 100.0,
            ];
            writeln!(input, "{:e} {:e} {:e} {:e}", p[0], p[1], p[2], p[3]).unwrap();
            pts.push(p.map(f64::from));
        }
        let inp = dir.join("in.txt");
        std::fs::write(&inp, input).unwrap();
        let run = |exe: &std::path::Path| {
            let o = Command::new(exe).stdin(std::fs::File::open(&inp).unwrap()).output().unwrap();
            assert!(o.status.success());
            String::from_utf8(o.stdout)
                .unwrap()
                .lines()
                .map(|l| l.parse().unwrap())
                .collect::<Vec<i64>>()
        };
        let got = run(&exes[0]);
        assert_eq!(got.len(), n);
        assert!(got == run(&exes[1]), "{shape:?}: WD_SAMP_EDGES=1 and 0 give different cells");
        assert!(got == run(&exes[2]), "{shape:?}: WD_SAMP_LEAN=1 and 0 give different cells");
        let compiled = &exes[if shape == Shape::Spherical { 3 } else { 4 }];
        assert!(
            got == run(compiled),
            "{shape:?}: the shape compiled in (WD_SAMP_SHAPE) gives other cells"
        );
        let (mut inside, mut near, mut far) = (0, 0, 0);
        for (p, &g) in pts.iter().zip(&got) {
            let c = look.coordinates(&f, [p[0], p[1], p[2]], p[3]);
            let want = look.cell(c).map_or(-1, i64::from);
            inside += usize::from(want >= 0);
            if want == g {
                continue;
            }
            let close = |x: f64, e: &[f64]| e.iter().any(|&b| (x - b).abs() <= 1e-5 * (e[e.len() - 1] - e[0]));
            if close(c[0], &b.radial) || close(c[1], &b.azimuth) || close(c[2], &b.polar) || close(c[3], &b.delay) {
                near += 1;
            } else {
                far += 1;
                if far <= 5 {
                    eprintln!("{shape:?}: point {p:?} (coordinates {c:?}): device cell {g}, CPU {want}");
                }
            }
        }
        eprintln!("{shape:?}: {n} points, {inside} in the grid, {near} on the other side of an edge within float rounding, {far} others");
        assert!(inside > n / 4, "{inside}");
        assert!(far == 0 && near * 1000 <= n, "{near} near, {far} far");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The spherical grid both warp twins bin into (C++ declaring `SampParams T`): r by arithmetic,
/// φ, cos θ and the delays searched, as the kernel's.
const SPHERICAL_GRID: &str = r#"    static float radial[11], azimuth[5] = {0.0f, 15.0f, 60.0f, 100.0f, 180.0f}, polar[9], delay[17];
    for (int i = 0; i <= 10; ++i) radial[i] = 3.0f * i;
    for (int i = 0; i <= 8; ++i) polar[i] = -1.0f + 0.25f * i;
    for (int i = 0; i <= 16; ++i) delay[i] = -20.0f + 20.0f * i;
    SampParams T;
    memset(&T, 0, sizeof T);
    T.radial = radial; T.azimuth = azimuth; T.polar = polar; T.delay = delay;
    T.n_radial = 11; T.n_azimuth = 5; T.n_polar = 9; T.n_delay = 17;
    T.lo[0] = 0.0f; T.inv[0] = 1.0f / 3.0f;
    T.lo[1] = azimuth[0]; T.lo[2] = polar[0]; T.lo[3] = delay[0];
    T.hi[0] = radial[10]; T.hi[1] = azimuth[4]; T.hi[2] = polar[8]; T.hi[3] = delay[16];
    T.axis[2] = 1.0f; T.e1[0] = 1.0f; T.e2[1] = 1.0f;
    T.ng_over_c = 4.5f; T.spherical = 1; T.time_cells = 18;
"#;

/// The warp compaction of the points (`kernels/sampled.cu` WD_SAMP_COMPACT: `sampled_points_warp`,
/// `sampled_drain`) compiled for the host with a warp of threads (`__ballot_sync`, `__syncwarp`
/// on a barrier of the warp's lanes, the atomics on the host's) against the lane-at-a-time
/// `sampled_points` of the same file on the same segments: per lane a run of photons, each a
/// chain of random segments (0–12 points at Δ = 1 m, some lanes idle, photons ending with
/// `sampled_end`), into a 4-D grid whose cells the points hit and leave. The histograms (sums,
/// squares, spatial squares) must be the same integers, the counters and every lane's state (next
/// distance, open runs) the same bits; with full warps and a warp of 13 lanes, Δ = 1 m and one
/// point per segment. Both paths are compiled from the kernel's text, so a compaction that lost,
/// reordered (the float runs) or duplicated a point, or mishandled the queue's refill past a
/// warp's width, would differ.
#[test]
fn warp_compaction_is_lane_at_a_time() {
    let fixed = include_str!("../kernels/fixed_point.cuh");
    let mut body = String::new();
    for (from, to) in [
        ("#define WD_TAG_TABULATE", "// Must match SampParams"),
        ("struct SampParams {", "// mod.rs Acceptance::weight"),
        ("// add_u128: fixed_point.cuh", "// One photon's state between segments"),
        ("// One photon's state between segments", "// mod.rs Tabulate::walk's start"),
        (
            "// The photon's end: its counts added",
            "__device__ __forceinline__ void sampled_walk",
        ),
        (
            "// Tabulate::photon_sampled's points of a segment",
            "// The rest of mod.rs Tabulate::walk",
        ),
        ("// Warp compaction of the points", "// WD_SAMP_JOBQ: a warp's job queue"),
    ] {
        body.push_str(piece(KERNEL, from, to));
    }
    assert!(body.contains("sampled_points_warp(") && body.contains("#if WD_SAMP_COMPACT"));
    let pre = r#"#include <cmath>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <barrier>
#include <thread>
#include <vector>
using std::min; using std::max;
#define __device__
#define __forceinline__ inline
static float __fdividef(float a, float b) { return a / b; }
#define WD_SAMP_COMPACT 1
// This twin's warp loop is the lane-per-photon loop (each lane's own photons); the job queue and
// the split squares, on by default in the kernel, have their own twin below
// (`job_queue_and_split_squares_are_the_default`), which runs the kernel's loop itself.
#define WD_SAMP_JOBQ 0
#define WD_SAMP_RED 0
struct V3 { float x, y, z; };
struct PState { V3 pos, dir; float time, ocm; };
struct Segment { float length, tot; };
static float wd_u32_to_uniform(unsigned int x) { return (float)((x >> 8) + 1u) * (1.0f / 16777216.0f); }
static unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static int __popc(unsigned x) { return __builtin_popcount(x); }
// The warp: `width` threads, lane = thread_local, a barrier for __syncwarp and the ballots.
static int g_width = 32;
static std::barrier<>* g_bar;
static thread_local int t_lane;
static bool g_pred[32];
static void __syncwarp(unsigned) { g_bar->arrive_and_wait(); }
static unsigned __ballot_sync(unsigned, bool p) {
    g_pred[t_lane] = p;
    g_bar->arrive_and_wait();
    unsigned b = 0;
    for (int i = 0; i < g_width; ++i) b |= (unsigned)g_pred[i] << i;
    g_bar->arrive_and_wait();
    return b;
}
"#;
    let main = [r#"
static unsigned long long lcg(unsigned long long& s) { s = s * 6364136223846793005ull + 1442695040888963407ull; return s >> 33; }
static float unif(unsigned long long& s) { return (float)(lcg(s) & 0xffffff) / 16777216.0f; }
struct Hist { std::vector<unsigned long long> sum, sumsq, ssq; };
int main() {
"#, SPHERICAL_GRID, r#"
    int cells = 10 * 4 * 8 * 18, spatial = 10 * 4 * 8;
    const int STEPS = 60;  // a warp of threads on barriers is slow on a busy host
    int failures = 0;
    for (int width : {32, 13}) {
        for (float step : {1.0f, 0.0f}) {
            T.step = step;
            g_width = width;
            // The segments: per lane and step its start, direction, length, time; the photon ends
            // (then a new one starts) with probability 1/8 after a segment; lane 3 idles on odd steps.
            struct Seg { V3 pos, dir; float len, time, w; bool has, end; };
            std::vector<Seg> segs(STEPS * width);
            unsigned long long rs = 12345 + width + (step > 0.0f);
            for (int k = 0; k < STEPS; ++k) for (int l = 0; l < width; ++l) {
                Seg& g = segs[k * width + l];
                float ct = 2.0f * unif(rs) - 1.0f, ph = 6.2831853f * unif(rs), st = sqrtf(1.0f - ct * ct);
                g.pos = V3{36.0f * unif(rs) - 18.0f, 36.0f * unif(rs) - 18.0f, 36.0f * unif(rs) - 18.0f};
                g.dir = V3{st * cosf(ph), st * sinf(ph), ct};
                g.len = (lcg(rs) % 8 == 0) ? 0.0f : 12.0f * unif(rs);
                g.time = 300.0f * unif(rs);
                g.w = 0.25f + unif(rs);
                g.has = !(l == 3 && (k & 1));
                g.end = lcg(rs) % 8 == 0;
            }
            auto seg_of = [&](SampState& S, SampSeg& sg, const Seg& g) {
                S.st.pos = g.pos; S.st.dir = g.dir; S.st.time = g.time; S.st.ocm = 1.0f / 0.22f;
                sg.seg.length = g.len; sg.seg.tot = 1.0f; sg.w = g.w;
            };
            auto fresh = [&](SampState& S, int l, int k) {
                S.bits = 0x9E3779B9u * (unsigned)(l * 1000 + k + 1);
                S.next = wd_u32_to_uniform(S.bits) * T.step;
                S.k = 0;
                S.runs = SampRuns{-1, -1, 0.0f, 0.0f};
            };
            Hist h[2];
            std::vector<SampCounts> cnt[2];
            std::vector<SampState> fin[2];
            for (int path = 0; path < 2; ++path) {
                Hist& H = h[path];
                H.sum.assign(cells, 0); H.sumsq.assign(2 * cells, 0); H.ssq.assign(2 * spatial, 0);
                SampParams TT = T;
                TT.sum = H.sum.data(); TT.sumsq = H.sumsq.data(); TT.spatial_sumsq = H.ssq.data();
                cnt[path].assign(width, SampCounts{0, 0, 0, 0, 0, 0});
                fin[path].assign(width, SampState{});
                auto lane_fn = [&](int l) {
                    t_lane = l;
                    SampState S; fresh(S, l, 0);
                    SampCounts& n = cnt[path][l];
                    static SampQueue q;
                    unsigned full = width == 32 ? 0xffffffffu : (1u << width) - 1u;
                    // WD_SAMP_DEFER: the queue kept across segments and photons (the kernel's loop).
                    unsigned long long mine = 0;
                    int queued = 0;
#if WD_SAMP_DEFER
                    if (path == 0) {
                        // The kernel's loop: a lane whose segment has points left after
                        // WD_SAMP_ROUNDS keeps it (no next segment, no end) at the next step.
                        int k = 0;
                        bool pending = false;
                        for (;;) {
                            bool active = k < STEPS;
                            if (__ballot_sync(full, active) == 0u) break;
                            const Seg& g = segs[min(k, STEPS - 1) * width + l];
                            SampSeg sg{};
                            if (active) seg_of(S, sg, g);
                            sampled_enqueue(TT, q, full, width, l, active && g.has, S, sg, n, mine, queued, WD_SAMP_ROUNDS, pending);
                            bool ending = false;
                            if (active && !pending) {
                                if (g.has) { S.k += 1; ending = g.end; }
                                if (ending) sampled_end_counts(S, n, true, false);
                                ++k;
                            }
                            sampled_mark(TT, q, full, width, l, ending, S.runs, n, mine, queued);
                            if (ending) { SampRuns keep = S.runs; fresh(S, l, k); S.runs = keep; }
                        }
                        if (queued > 0) sampled_drain(TT, q, full, l, queued, (unsigned)mine, 0.0f, S.runs, n);
                        fin[path][l] = S;
                        return;
                    }
#endif
                    for (int k = 0; k < STEPS; ++k) {
                        const Seg& g = segs[k * width + l];
                        SampSeg sg; seg_of(S, sg, g);
                        if (path == 0) {
                            sampled_points_warp(TT, q, full, width, l, g.has, S, sg, n);
                        } else if (g.has) {
                            sampled_points(TT, S, sg, n);
                        }
                        if (g.has) {
                            S.k += 1;
                            if (g.end) { sampled_end(TT, S, n, true, false); fresh(S, l, k + 1); }
                        }
                    }
                    fin[path][l] = S;
                };
                if (path == 0) {
                    std::barrier<> bar(width);
                    g_bar = &bar;
                    std::vector<std::thread> th;
                    for (int l = 0; l < width; ++l) th.emplace_back(lane_fn, l);
                    for (auto& t : th) t.join();
                } else {
                    for (int l = 0; l < width; ++l) lane_fn(l);
                }
            }
            unsigned long long points = 0, runs = 0, filled = 0;
            bool same = h[0].sum == h[1].sum && h[0].sumsq == h[1].sumsq && h[0].ssq == h[1].ssq;
            for (int l = 0; l < width; ++l) {
                const SampCounts &a = cnt[0][l], &b = cnt[1][l];
                same = same && memcmp(&a, &b, sizeof a) == 0;
                const SampState &x = fin[0][l], &y = fin[1][l];
                same = same && memcmp(&x.next, &y.next, 4) == 0 && x.k == y.k && x.runs.cell == y.runs.cell
                    && x.runs.spatial == y.runs.spatial && memcmp(&x.runs.x, &y.runs.x, 4) == 0
                    && memcmp(&x.runs.spatial_x, &y.runs.spatial_x, 4) == 0;
                points += b.points; runs += b.runs;
            }
            for (int c = 0; c < cells; ++c) filled += h[1].sum[c] != 0;
            // FNV-1a of the compacted path's tables, counters and final states: compared across
            // builds with other switches by the test.
            unsigned long long fnv = 1469598103934665603ull;
            auto eat = [&](const void* p, size_t len) { for (size_t i = 0; i < len; ++i) { fnv ^= ((const unsigned char*)p)[i]; fnv *= 1099511628211ull; } };
            eat(h[0].sum.data(), 8 * h[0].sum.size()); eat(h[0].sumsq.data(), 8 * h[0].sumsq.size()); eat(h[0].ssq.data(), 8 * h[0].ssq.size());
            for (int l = 0; l < width; ++l) { eat(&cnt[0][l], sizeof(SampCounts)); eat(&fin[0][l].next, 4); eat(&fin[0][l].runs, sizeof(SampRuns)); }
            printf("width %d, step %g: %llu points, %llu runs, %llu cells filled, tables %016llx: %s\n", width, step, points, runs, filled, fnv, same ? "same" : "DIFFERENT");
            if (!same || points < 200 || runs < 100 || filled < 100) ++failures;
        }
    }
    return failures;
}
"#]
    .concat();
    let src = format!("{pre}{fixed}{body}{main}");
    let dir = std::env::temp_dir().join(format!("wd-sampled-warp-twin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpp = dir.join("warp.cpp");
    std::fs::write(&cpp, src).unwrap();
    // The default switches, the earlier code (all off) and each speed-up off alone: every build's
    // compaction equals its lane-at-a-time path, and all builds give the same tables.
    let builds: [&[&str]; 8] = [
        &[],
        &["WD_SAMP_ROUNDS=0"],
        &["WD_SAMP_ROUNDS=1"],
        &["WD_SAMP_NODIV=0", "WD_SAMP_EDGES=0", "WD_SAMP_SLOTS=0", "WD_SAMP_DEFER=0"],
        &["WD_SAMP_NODIV=0"],
        &["WD_SAMP_EDGES=0"],
        &["WD_SAMP_DEFER=0"],
        &["WD_SAMP_SLOTS=0", "WD_SAMP_DEFER=0"],
    ];
    let mut first: Option<String> = None;
    for (i, defines) in builds.iter().enumerate() {
        let exe = dir.join(format!("warp{i}"));
        if !compile(&cpp, &exe, &["-O2", "-std=c++20", "-ffp-contract=off", "-pthread", "-w"], defines) {
            return;
        }
        let o = Command::new(&exe).output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        eprintln!("{defines:?}:\n{out}");
        assert!(
            o.status.success(),
            "{defines:?}: the warp compaction differs from the lane-at-a-time path:\n{out}"
        );
        assert_eq!(out.lines().filter(|l| l.ends_with(": same")).count(), 4, "{out}");
        match &first {
            None => first = Some(out),
            Some(f) => assert_eq!(&out, f, "{defines:?} gives other tables than the default switches"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The structural alternatives of `kernels/sampled.cu` (docs/spline.md "Job queue and
/// fire-and-forget squares"): the kernel's warp loop `sampled_loop` compiled for the host with a
/// warp of threads, photons whose segments are a function of their id (stubs of the emission,
/// walk and move), run with each build's photon distribution — `WD_SAMP_JOBQ` (the default: the
/// job queue fed from the launch's counter; also with 5 photons a refill and with unlimited
/// rounds), or each lane its own ids, next += width (`WD_SAMP_JOBQ=0`, the earlier default) — and
/// each build's squares — `WD_SAMP_RED`'s digits folded into u128 by the kernel's `sampled_fold`
/// after the "launch" (the default), or add_u128 (`WD_SAMP_RED=0`) — and `WD_SAMP_STEPWISE`'s
/// loop (docs/spline.md "One point per step": each lane bins its own points, at most one or three
/// a step, with and without the job queue and the digits). All builds must give the same integers (sums, u128 squares and spatial squares) and counters, every
/// photon id of the launch started exactly once; with full warps and a warp of 13 lanes, Δ = 1 m
/// and one point per segment. Batch means (`WD_SAMP_REP=256`: the default, session 35's end
/// markers and per-thread counters, each switch alone, other refills, no job queue, unlimited
/// rounds) must give one another's integers (the replicas folded into the spatial squares) and the
/// float runs' photons tabulated, segments and points. The digits are also checked against add_u128 value by value on
/// 2·10⁵ integers up to 2⁹⁶ (sums of many into a few cells, folded between batches), and a
/// square ≥ 2⁹⁶ must be counted, not added.
#[test]
fn job_queue_and_split_squares_are_the_default() {
    let fixed = include_str!("../kernels/fixed_point.cuh");
    let mut body = String::new();
    for (from, to) in [
        ("#define WD_TAG_TABULATE", "// Must match SampParams"),
        ("struct SampParams {", "// mod.rs Acceptance::weight"),
        ("// add_u128: fixed_point.cuh", "// One photon's state between segments"),
        ("// One photon's state between segments", "// mod.rs Tabulate::walk's start"),
        (
            "// Tabulate::photon_sampled's Sampler::new from the photon's bits",
            "// The photon's end: its counts added",
        ),
        (
            "// The photon's end: its counts added",
            "__device__ __forceinline__ void sampled_walk",
        ),
    ] {
        body.push_str(piece(KERNEL, from, to));
    }
    let mut tail = String::new();
    for (from, to) in [
        ("// Warp compaction of the points", "// As propagate.cu's default loop"),
        (
            "// WD_SAMP_RED: after every tabulate_sampled launch",
            "// Field offsets of SampParams",
        ),
    ] {
        tail.push_str(piece(KERNEL, from, to));
    }
    // The two-kernel estimator's loops (WD_SAMP_SPLIT): sampled_split.cu up to its kernels.
    tail.push_str(piece(SPLIT, "#ifndef WD_SAMP_SPLIT", "// The kernels (sampled_count_up"));
    assert!(tail.contains("void sampled_loop(") && tail.contains("void sampled_fold("));
    assert!(tail.contains("void sampled_paths_loop(") && tail.contains("void sampled_bins_loop("));
    let pre = r#"#include <cmath>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <barrier>
#include <thread>
#include <vector>
using std::min; using std::max;
#define __device__
#define __global__
#define __forceinline__ inline
static float __fdividef(float a, float b) { return a / b; }
#define __noinline__
struct V3 { float x, y, z; };
struct PhotonParams { int unused; };
struct PState { V3 pos, dir; float time, ocm; unsigned int slice; unsigned long long id; };
struct float4 { float x, y, z, w; };
static float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
struct float2 { float x, y; };
static float2 make_float2(float x, float y) { return float2{x, y}; }
struct Segment { float length, tot; };
struct Dim { unsigned x; };
static Dim blockIdx{0}, threadIdx{0}, gridDim{1}, blockDim{1};
static float wd_u32_to_uniform(unsigned int x) { return (float)((x >> 8) + 1u) * (1.0f / 16777216.0f); }
static unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static int __popc(unsigned x) { return __builtin_popcount(x); }
static int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
using std::signbit;
// The warp: `width` threads, lane = thread_local, a barrier for __syncwarp, ballots, shuffles.
static int g_width = 32;
static std::barrier<>* g_bar;
static thread_local int t_lane;
static bool g_pred[32];
static void __syncwarp(unsigned) { g_bar->arrive_and_wait(); }
static unsigned __ballot_sync(unsigned, bool p) {
    g_pred[t_lane] = p;
    g_bar->arrive_and_wait();
    unsigned b = 0;
    for (int i = 0; i < g_width; ++i) b |= (unsigned)g_pred[i] << i;
    g_bar->arrive_and_wait();
    return b;
}
static bool __any_sync(unsigned m, bool p) { return __ballot_sync(m, p) != 0u; }
// Shuffles of any value of up to 8 bytes: every lane posts its value, then reads its source's.
static unsigned long long g_words[32];
template <class X> static X shfl_from(X v, int src) {
    unsigned long long w = 0;
    memcpy(&w, &v, sizeof(X));
    g_words[t_lane] = w;
    g_bar->arrive_and_wait();
    unsigned long long r = g_words[src];
    g_bar->arrive_and_wait();
    X out;
    memcpy(&out, &r, sizeof(X));
    return out;
}
template <class X> static X __shfl_sync(unsigned, X v, int src) { return shfl_from(v, src); }
template <class X> static X __shfl_up_sync(unsigned, X v, int d) { return shfl_from(v, t_lane >= d ? t_lane - d : t_lane); }
// One warp's "launch": fn(lane) on `width` threads sharing the warp's barrier.
template <class F> static void run_warp(int width, F fn) {
    std::barrier<> bar(width);
    g_bar = &bar;
    std::vector<std::thread> th;
    for (int l = 0; l < width; ++l) th.emplace_back([&, l] { t_lane = l; fn(l); });
    for (auto& t : th) t.join();
}
static unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
// Photons as functions of their id: the k-th segment's start, direction, time, length, weight
// and whether the photon ends after it.
static unsigned long long mix(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull; x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull; x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
static float u01(unsigned long long h) { return (float)(h >> 40) * (1.0f / 16777216.0f); }
static void seg_state(PState& st, unsigned int k) {
    unsigned long long h = mix(st.id * 1000003ull + k);
    float ct = 2.0f * u01(mix(h + 1)) - 1.0f, ph = 6.2831853f * u01(mix(h + 2)), s = sqrtf(1.0f - ct * ct);
    st.pos = V3{36.0f * u01(mix(h + 3)) - 18.0f, 36.0f * u01(mix(h + 4)) - 18.0f, 36.0f * u01(mix(h + 5)) - 18.0f};
    st.dir = V3{s * cosf(ph), s * sinf(ph), ct};
    st.time = 300.0f * u01(mix(h + 6));
}
static unsigned long long g_lo;
static std::vector<int> g_started;
static void sampled_emit(const PhotonParams&, unsigned long long id, PState& st, unsigned int& bits) {
    st.id = id;
    st.ocm = 1.0f / 0.22f;
    st.slice = (unsigned int)(id % 3);
    seg_state(st, 0);
    bits = (unsigned int)mix(id ^ 0xABCDEFull);
}
"#;
    let stubs = r#"
// The weight of a segment's points from its photon's slice and direction (sampled_split.cu's
// sampled_bins recomputes it from the path, as sampled.cu's from the acceptance).
static float sampled_weight(const SampParams&, unsigned int slice, float nz) { return 0.25f + 0.5f * (nz + 1.0f) + 0.125f * (float)slice; }
static void sampled_walk(const PhotonParams&, const SampParams& T, const SampState& S, SampSeg& g) {
    // A photon's first segment: the photon taken by a lane (counted per id).
    if (S.k == 0) __atomic_fetch_add(&g_started[S.st.id - g_lo], 1, __ATOMIC_RELAXED);
    unsigned long long h = mix(S.st.id * 7919ull + S.k);
    g.seg.length = (h % 8 == 0) ? 0.0f : 12.0f * u01(mix(h + 11));
    g.seg.tot = 1.0f;
    g.zp = 0.0f;
    g.w = g.seg.length > 0.0f ? sampled_weight(T, S.st.slice, S.st.dir.z) : 0.0f;
}
static bool sampled_move(const PhotonParams&, const SampParams& T, SampState& S, const SampSeg&, SampCounts& n) {
    S.k += 1;
    unsigned long long h = mix(S.st.id * 104729ull + S.k);
    if (h % 6 == 0 || S.k >= 40) { sampled_end_move(T, S, n, (h & 64) != 0, (h & 64) == 0); return false; }
    seg_state(S.st, S.k);
    return true;
}
"#;
    let main = [r#"
typedef unsigned __int128 u128;
static unsigned long long fnv = 1469598103934665603ull;
static void eat(const void* p, size_t len) { for (size_t i = 0; i < len; ++i) { fnv ^= ((const unsigned char*)p)[i]; fnv *= 1099511628211ull; } }
// The squares of a table as u128: add_u128's pairs, or WD_SAMP_RED's digits folded into pairs.
static std::vector<u128> squares(std::vector<unsigned long long>& w, size_t n) {
    std::vector<unsigned long long> pairs;
#if WD_SAMP_RED
    pairs.assign(2 * n, 0);
    sampled_fold(w.data(), pairs.data(), n);
    for (size_t i = 0; i < 3 * n; ++i) if (w[i] != 0) { printf("fold left a digit\n"); exit(3); }
#else
    pairs = w;
#endif
    std::vector<u128> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = (u128)pairs[2 * i] | ((u128)pairs[2 * i + 1] << 64);
    return v;
}
int main() {
    int failures = 0;
    // The digits against add_u128, value by value (both compiled in every build; samp_add_sq is
    // add_u128 itself without WD_SAMP_RED).
    {
        SampParams T;
        memset(&T, 0, sizeof T);
        unsigned long long counters[WD_SAMP_COUNTERS + 2] = {0};
        T.counters = counters;
        const int cells = 5;
        std::vector<unsigned long long> w(WD_SAMP_SQ_WORDS * cells, 0), ref(2 * cells, 0), acc(2 * cells, 0);
        unsigned long long s = 99;
        for (int i = 0; i < 200000; ++i) {
            s = mix(s);
            int e = (int)(s % 64);
            double v = e < 40 ? std::round(std::ldexp((double)(mix(s + 1) >> 11), e - 30)) : std::ldexp((double)(mix(s + 1) >> 11), (int)(s % 43));
            if (i % 1000 == 7) v = std::ldexp(1.0, 64 + (i / 1000) % 32) - (i % 2000 == 7 ? std::ldexp(1.0, 43) : 0.0);
            if (!(v < std::ldexp(1.0, 96))) v = 0.0;
            int c = (int)(mix(s + 2) % cells);
            samp_add_sq(T, w.data() + WD_SAMP_SQ_WORDS * c, v);
            add_u128(ref.data() + 2 * c, v);
#if WD_SAMP_RED
            // The host's fold after every "launch", into the same u128 (its carries).
            if (i % 5000 == 4999) sampled_fold(w.data(), acc.data(), cells);
#endif
        }
#if WD_SAMP_RED
        sampled_fold(w.data(), acc.data(), cells);
#else
        acc = w;
#endif
        bool same = true;
        for (int k = 0; k < cells; ++k) same = same && acc[2 * k] == ref[2 * k] && acc[2 * k + 1] == ref[2 * k + 1];
        printf("split squares: 200000 integers up to 2^96 in %d cells: %s\n", cells, same ? "same" : "DIFFERENT");
        if (!same) ++failures;
#if WD_SAMP_RED
        unsigned long long before[3] = {w[0], w[1], w[2]};
        samp_add_sq(T, w.data(), std::ldexp(1.0, 96));
        if (counters[WD_SAMP_COUNTERS + 1] != 1 || w[0] != before[0] || w[1] != before[1] || w[2] != before[2]) {
            fprintf(stderr, "a square of 2^96 was not refused\n");
            ++failures;
        }
#endif
    }
"#, SPHERICAL_GRID, r#"
    const size_t cells = 10 * 4 * 8 * 18, spatial = 10 * 4 * 8;
    const unsigned long long photons = 300;
    for (int width : {32, 13}) {
        for (float step : {1.0f, 0.0f}) {
            T.step = step;
            g_width = width;
            g_lo = 5000 + width;
            g_started.assign(photons, 0);
            std::vector<unsigned long long> sum(cells, 0), sq(WD_SAMP_SQ_WORDS * cells, 0), ssq(WD_SAMP_SQ_WORDS * spatial, 0);
            unsigned long long counters[WD_SAMP_COUNTERS + 2] = {0};
            SampParams TT = T;
            TT.sum = sum.data(); TT.sumsq = sq.data(); TT.spatial_sumsq = ssq.data(); TT.counters = counters;
            TT.photon_lo = g_lo; TT.photon_hi = g_lo + photons;
            std::vector<SampCounts> cnt(width, SampCounts{0, 0, 0, 0, 0, 0});
#if WD_SAMP_REP
            // Batch means: R replicas of every spatial cell, folded into the spatial squares' digits.
            std::vector<unsigned long long> reps(WD_SAMP_REP * spatial, 0);
            TT.rep = reps.data();
            TT.n_spatial = spatial;
#endif
#if WD_SAMP_COMPACT
            static SampQueue q;
#endif
            static SampJobs J;
#if WD_SAMP_SCAN
            static SampScan sc;
#endif
            unsigned full = width == 32 ? 0xffffffffu : (1u << width) - 1u;
#if WD_SAMP_SPLIT
            // Rounds of the two kernels' loops (one warp each), as tabulate/gpu.rs Split::launch:
            // the paused photons resumed until none is left.
            // Rounds of at most 64 jobs: the paused photons and fresh ones, then the paused alone
            // with the buffer's share of segments each.
            const unsigned long long cap_jobs = 64;
            std::vector<SampSegRec> path(cap_jobs * WD_SAMP_PATH);
            std::vector<SampHead> head(cap_jobs);
            std::vector<SampCont> conts[2] = {std::vector<SampCont>(cap_jobs), std::vector<SampCont>(cap_jobs)};
            static SampPathJobs PJ;
            unsigned long long work[3], pending = 0, done = 0;
            for (int round = 0; done < photons || pending > 0; ++round) {
                unsigned long long fresh = std::min(photons - done, cap_jobs - pending);
                unsigned long long cap = fresh > 0 ? WD_SAMP_PATH : std::max<unsigned long long>(WD_SAMP_PATH, cap_jobs * WD_SAMP_PATH / pending);
                SampSplit X{path.data(), head.data(), conts[round % 2].data(), conts[1 - round % 2].data(), work, pending + fresh, pending, cap};
                TT.photon_lo = g_lo + done;
                TT.photon_hi = g_lo + done + fresh;
                done += fresh;
                work[0] = work[1] = work[2] = 0;
                run_warp(width, [&](int l) { sampled_paths_loop(PhotonParams{0}, TT, X, &PJ, full, width, l, cnt[l]); });
                run_warp(width, [&](int l) { sampled_bins_loop(TT, X, full, l, cnt[l]); });
                pending = work[2];
                if (round > 1000) { printf("the rounds do not end\n"); return 9; }
            }
#else
            run_warp(width, [&](int l) {
#if WD_SAMP_SCAN
                sampled_loop(PhotonParams{0}, TT, &J, sc, full, width, l, g_lo + l, (unsigned long long)width, cnt[l]);
#elif WD_SAMP_STEPWISE
                sampled_loop(PhotonParams{0}, TT, &J, full, width, l, g_lo + l, (unsigned long long)width, cnt[l]);
#else
                // WD_SAMP_LEAN_SMEM: the warp's counters, one for all its lanes.
                sampled_loop(PhotonParams{0}, TT, q, &J, full, width, l, g_lo + l, (unsigned long long)width, cnt[WD_SAMP_LEAN_SMEM ? 0 : l]);
#endif
            });
#endif
#if WD_SAMP_REP
            sampled_rep_fold(reps.data(), ssq.data(), counters, spatial, WD_SAMP_REP);
            for (unsigned long long r : reps) if (r != 0) { printf("the replicas were not zeroed\n"); exit(3); }
#endif
            SampCounts n{0, 0, 0, 0, 0, 0};
            for (const SampCounts& c : cnt) {
                n.tabulated += c.tabulated; n.absorbed += c.absorbed; n.escaped += c.escaped;
                n.segments += c.segments; n.runs += c.runs; n.points += c.points;
            }
            bool once = true;
            for (int c : g_started) once = once && c == 1;
            std::vector<u128> a = squares(sq, cells), b = squares(ssq, spatial);
            fnv = 1469598103934665603ull;
            eat(sum.data(), 8 * cells); eat(a.data(), 16 * cells); eat(b.data(), 16 * spatial); eat(&n, sizeof n);
            unsigned long long filled = 0;
            for (size_t c = 0; c < cells; ++c) filled += sum[c] != 0;
            printf("width %d, step %g: %llu photons ended (%llu absorbed), %llu tabulated, %llu segments, %llu points, %llu runs, %llu cells filled, each photon started once: %s, tables %016llx\n",
                   width, step, n.absorbed + n.escaped, n.absorbed, n.tabulated, n.segments, n.points, n.runs, filled, once ? "yes" : "NO", fnv);
            if (!once || n.absorbed + n.escaped != photons || n.points < 500 || (WD_SAMP_REP == 0 && n.runs < 200) || filled < 100) ++failures;
        }
    }
    return failures;
}
"#]
    .concat();
    let src = format!("{pre}{fixed}{body}{stubs}{tail}{main}");
    let dir = std::env::temp_dir().join(format!("wd-sampled-jobq-twin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpp = dir.join("jobq.cpp");
    std::fs::write(&cpp, src).unwrap();
    // The default (job queue, split squares, 2 rounds), the earlier default, each turned off,
    // 5-photon refills and unlimited rounds.
    // WD_SAMP_STEPWISE (one point per lane and step, no queue of points): with the job queue, with
    // 5-photon refills, without the job queue, with add_u128's squares and with 3 points a step.
    // WD_SAMP_SPLIT (two kernels a round): paths of 96 segments (no photon paused: the stubs'
    // photons end by their 40th), of 3 and of 7 (most paused, several rounds), 5-photon refills,
    // add_u128's squares.
    let builds: [&[&str]; 16] = [
        &[],
        &["WD_SAMP_JOBQ=0", "WD_SAMP_RED=0", "WD_SAMP_ROUNDS=4"],
        &["WD_SAMP_JOBQ=0"],
        &["WD_SAMP_RED=0"],
        &["WD_SAMP_JOBS=5"],
        &["WD_SAMP_ROUNDS=0"],
        &["WD_SAMP_STEPWISE=1"],
        &["WD_SAMP_STEPWISE=1", "WD_SAMP_JOBS=5"],
        &["WD_SAMP_STEPWISE=1", "WD_SAMP_JOBQ=0"],
        &["WD_SAMP_STEPWISE=1", "WD_SAMP_RED=0"],
        &["WD_SAMP_STEPWISE=1", "WD_SAMP_STEP_POINTS=3"],
        &["WD_SAMP_SPLIT=1"],
        &["WD_SAMP_SPLIT=1", "WD_SAMP_PATH=3"],
        &["WD_SAMP_SPLIT=1", "WD_SAMP_PATH=7"],
        &["WD_SAMP_SPLIT=1", "WD_SAMP_PATH=7", "WD_SAMP_JOBS=5"],
        &["WD_SAMP_SPLIT=1", "WD_SAMP_PATH=3", "WD_SAMP_RED=0"],
    ];
    // WD_SAMP_QPOINT's builds (integer amounts per point, the comb by fma): WD_SAMP_SCAN's warp
    // scans (with and without the job queue, with add_u128's squares, with 5-photon refills) must
    // give the integers of WD_SAMP_STEPWISE's lane-at-a-time merge with WD_SAMP_QPOINT (one and
    // three points a step); their points and runs within 1 % of the float runs' builds above.
    let qpoint: [&[&str]; 6] = [
        &["WD_SAMP_STEPWISE=1", "WD_SAMP_QPOINT=1"],
        &["WD_SAMP_STEPWISE=1", "WD_SAMP_QPOINT=1", "WD_SAMP_STEP_POINTS=3"],
        &["WD_SAMP_SCAN=1"],
        &["WD_SAMP_SCAN=1", "WD_SAMP_JOBQ=0"],
        &["WD_SAMP_SCAN=1", "WD_SAMP_RED=0"],
        &["WD_SAMP_SCAN=1", "WD_SAMP_JOBS=5"],
    ];
    let count = |line: &str, what: &str| -> f64 {
        let i = line.find(&format!(" {what},")).unwrap_or_else(|| panic!("{what} in {line}"));
        line[..i].rsplit(' ').next().unwrap().parse().unwrap()
    };
    // Batch means (WD_SAMP_REP, the GPU's default; docs/spline.md "Batch means", "Session 36"): the
    // default (the photons' ends as their last points' signs, the warp's counters, 32 photons a
    // refill), session 35's (end markers in the queue, per-thread counters, 8 a refill), each
    // switch alone, 5-photon refills, without the job queue, with unlimited rounds and with the
    // queue's entries as six arrays (WD_SAMP_AOS=0, session 37's default; also with session 35's
    // end markers) must give the same sums, spatial squares (the replicas folded) and counts; and
    // the same photons tabulated, segments and points as the float runs' builds (the same points,
    // no runs).
    let batch: [&[&str]; 9] = [
        &["WD_SAMP_REP=256"],
        &["WD_SAMP_REP=256", "WD_SAMP_ENDBITS=0", "WD_SAMP_LEAN_SMEM=0"],
        &["WD_SAMP_REP=256", "WD_SAMP_AOS=0"],
        &["WD_SAMP_REP=256", "WD_SAMP_AOS=0", "WD_SAMP_ENDBITS=0", "WD_SAMP_LEAN_SMEM=0"],
        &["WD_SAMP_REP=256", "WD_SAMP_ENDBITS=0"],
        &["WD_SAMP_REP=256", "WD_SAMP_LEAN_SMEM=0"],
        &["WD_SAMP_REP=256", "WD_SAMP_JOBS=5"],
        &["WD_SAMP_REP=256", "WD_SAMP_JOBQ=0"],
        &["WD_SAMP_REP=256", "WD_SAMP_ROUNDS=0"],
    ];
    let run_group = |group: &[&[&str]]| -> Option<String> {
        let mut first: Option<String> = None;
        for (i, defines) in group.iter().enumerate() {
            let exe = dir.join(format!("jobq{i}"));
            if !compile(&cpp, &exe, &["-O2", "-std=c++20", "-ffp-contract=off", "-pthread", "-w"], defines) {
                return None;
            }
            let o = Command::new(&exe).output().unwrap();
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            eprintln!("{defines:?}:\n{out}{}", String::from_utf8_lossy(&o.stderr));
            assert!(o.status.success(), "{defines:?}: a check failed:\n{out}");
            assert_eq!(out.lines().filter(|l| l.contains("started once: yes")).count(), 4, "{out}");
            match &first {
                None => first = Some(out),
                Some(f) => assert_eq!(&out, f, "{defines:?} gives other tables than {:?}", group[0]),
            }
        }
        first
    };
    let mut reference: Option<String> = None;
    for group in [&builds[..], &qpoint[..]] {
        let Some(out) = run_group(group) else { return };
        match &reference {
            None => reference = Some(out),
            Some(r) => {
                assert_ne!(&out, r, "the per-point amounts change the tables' last digits");
                for (a, b) in r
                    .lines()
                    .filter(|l| l.contains("tables"))
                    .zip(out.lines().filter(|l| l.contains("tables")))
                {
                    for what in ["points", "runs", "segments"] {
                        let (x, y) = (count(a, what), count(b, what));
                        assert!(
                            (x - y).abs() <= 0.01 * x,
                            "{what}: {x} (float runs) against {y} (per-point amounts)\n{a}\n{b}"
                        );
                    }
                }
            }
        }
    }
    let Some(out) = run_group(&batch) else { return };
    let r = reference.unwrap();
    let tables = |s: &str| s.lines().filter(|l| l.contains("tables")).map(str::to_string).collect::<Vec<_>>();
    let (a, b) = (tables(&r), tables(&out));
    assert_eq!(a.len(), b.len());
    for (a, b) in a.iter().zip(&b) {
        for what in ["tabulated", "segments", "points"] {
            assert_eq!(count(a, what), count(b, what), "{what}: float runs against batch means\n{a}\n{b}");
        }
        assert_eq!(count(b, "runs"), 0.0, "batch means form no runs: {b}");
        assert_ne!(a, b, "batch means round each point: other sums");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `sampled_weight` with the acceptance polynomial from the parameter block (sampled.cu
/// WD_SAMP_ANGC, the default: Horner unrolled over 16 coefficients, zeros above `n_ang`) against
/// the loop over `n_ang` loaded coefficients (WD_SAMP_ANGC=0), compiled for the host with
/// multiply-adds fused as NVVM fuses them on the GPU (`-ffp-contract=fast -mfma`): the same bits
/// for every photon direction cos θ in [−1, 1] (200 001 values and ±0) and the polynomials of the
/// three ice models' `as.dat` (11 coefficients), one of 16 and one of 17 (the loop in both
/// builds). The identity: fma(+0, nz, +0) = +0, so the leading zeros leave acc = +0 and the
/// first nonzero step is the loop's first. gpu-check compares the two builds' tables on a GPU.
#[test]
fn acceptance_polynomial_from_the_parameters_is_the_loop() {
    use warpdrive_photon::spectrum::AngularSensitivity;
    let fma = std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| c.split_whitespace().any(|w| w == "fma"));
    if !fma {
        eprintln!("skipped: this CPU has no fused multiply-add (the twin needs -mfma)");
        return;
    }
    let mut polys: Vec<(f64, Vec<f64>)> = ["spice_3.2.1", "spice_ftp-v3m", "spice_bfr-v2"]
        .iter()
        .map(|m| {
            let a = AngularSensitivity::read(&warpdrive_core::data::data_dir().join("ice").join(m).join("as.dat"))
                .unwrap_or_else(|e| panic!("{e} (the ice models are shared data: WARPDRIVE_DATA)"));
            (a.mas, a.coeffs)
        })
        .collect();
    assert!(polys.iter().all(|(_, c)| c.len() == 11), "the models' polynomials changed length");
    for n in [16usize, 17] {
        polys.push((0.9, (0..n).map(|i| 0.3 * (-0.7f64).powi(i as i32) + 0.01 * i as f64).collect()));
    }
    let body = [
        piece(KERNEL, "#define WD_TAG_TABULATE", "// Must match SampParams"),
        piece(KERNEL, "struct SampParams {", "// add_u128: fixed_point.cuh"),
    ]
    .concat();
    assert!(body.contains("#if WD_SAMP_ANGC") && body.contains("float angc[WD_SAMP_ANGC_MAX]"));
    let pre = "#include <cmath>\n#include <cstdio>\n#include <cstring>\n#include <algorithm>\n\
               using std::min; using std::max;\n#define __device__\n#define __forceinline__ inline\nstatic float __fdividef(float a, float b) { return a / b; }\n\
               struct V3 { float x, y, z; };\n";
    let main = r#"
int main() {
    int n; double mas;
    unsigned bad = 0;
    while (scanf("%d %lf", &n, &mas) == 2) {
        static float ang[64], share[1] = {1.0f};
        SampParams T;
        memset(&T, 0, sizeof T);
        for (int i = 0; i < n; ++i) { double c; scanf("%lf", &c); ang[i] = (float)c; if (i < WD_SAMP_ANGC_MAX && n <= WD_SAMP_ANGC_MAX) T.angc[i] = (float)c; }
        T.ang = ang; T.n_ang = n; T.share = share; T.mas = (float)mas;
        unsigned long long h = 1469598103934665603ull;
        for (int k = -100000; k <= 100002; ++k) {
            float nz = k == 100001 ? 0.0f : k == 100002 ? -0.0f : (float)k / 100000.0f;
            float w = sampled_weight(T, 0, nz);
            unsigned u; memcpy(&u, &w, 4);
            h = (h ^ u) * 1099511628211ull;
        }
        printf("%d %016llx\n", n, h);
    }
}
"#;
    let src = format!("{pre}{body}{main}");
    let dir = std::env::temp_dir().join(format!("wd-sampled-angc-twin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpp = dir.join("angc.cpp");
    std::fs::write(&cpp, src).unwrap();
    let mut input = String::new();
    for (mas, c) in &polys {
        write!(input, "{} {mas:e}", c.len()).unwrap();
        for x in c {
            write!(input, " {x:e}").unwrap();
        }
        input.push('\n');
    }
    let mut outs = Vec::new();
    for (i, defines) in [&["WD_SAMP_ANGC=1"][..], &["WD_SAMP_ANGC=0"][..]].iter().enumerate() {
        let exe = dir.join(format!("angc{i}"));
        if !compile(&cpp, &exe, &["-O2", "-ffp-contract=fast", "-mfma", "-w"], defines) {
            return;
        }
        let inp = dir.join("polynomials.txt");
        std::fs::write(&inp, &input).unwrap();
        let o = Command::new(&exe).stdin(std::fs::File::open(&inp).unwrap()).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        outs.push(String::from_utf8(o.stdout).unwrap());
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(outs[0].lines().count(), polys.len(), "{}", outs[0]);
    assert_eq!(outs[0], outs[1], "WD_SAMP_ANGC changed the weights' bits (hash per polynomial)");
}

/// `samp_azimuth_deg` (sampled.cu WD_SAMP_ATAN: |atan2(b, a)| in degrees by an octant reduction
/// and a polynomial), compiled for the host with multiply-adds fused as NVVM fuses them
/// (`-ffp-contract=fast -mfma` where the host has FMA, else unfused: both are checked by the bound),
/// against atan2 in double on 10⁶ points of every octant, the axes, the diagonals and (0, 0): at
/// most 2·10⁻⁵ degrees off (a float near 180 has an ulp of 1.5·10⁻⁵) and at most 1.5 × the default
/// path's error (atan2f in float, scaled in float), and within [0, 180].
#[test]
fn azimuth_polynomial_is_atan2() {
    let f = piece(
        KERNEL,
        "__device__ __forceinline__ float samp_azimuth_deg",
        "// sampled.rs Lookup::coordinates",
    );
    let src = format!(
        r#"#include <cmath>
#include <cstdio>
#include <cstdint>
#include <initializer_list>
#define __device__
#define __forceinline__ inline
static float __fdividef(float a, float b) {{ return a / b; }}
{f}
int main() {{
    double worst = 0.0, worst_f = 0.0, lo = 1e9, hi = -1e9;
    uint64_t s = 88172645463325252ull;
    auto next = [&]() {{ s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }};
    auto check = [&](float a, float b) {{
        double r = samp_azimuth_deg(b, a), e = std::fabs(std::atan2((double)b, (double)a)) * 57.29577951308232;
        if (a == 0.0f && b == 0.0f) e = 0.0;
        worst = std::fmax(worst, std::fabs(r - e));
        // The kernel's default: atan2f in float, scaled in float.
        double rf = std::fabs(std::atan2(b, a)) * 57.29577951308232f;
        if (!(a == 0.0f && b == 0.0f)) worst_f = std::fmax(worst_f, std::fabs(rf - e));
        lo = std::fmin(lo, r);
        hi = std::fmax(hi, r);
    }};
    for (int i = 0; i < 1000000; ++i) {{
        float a = (float)((int64_t)(next() >> 11) - (1ll << 52)) * (float)(1.0 / (1ll << 52)) * 500.0f;
        float b = (float)((int64_t)(next() >> 11) - (1ll << 52)) * (float)(1.0 / (1ll << 52)) * 500.0f;
        check(a, b);
    }}
    for (float v : {{1e-30f, 1e-3f, 1.0f, 7.5f, 300.0f}})
        for (float sa : {{-1.0f, 0.0f, 1.0f}})
            for (float sb : {{-1.0f, 0.0f, 1.0f}}) check(sa * v, sb * v);
    check(0.0f, 0.0f);
    printf("%.3e (atan2f in float: %.3e), range %.9f %.9f\n", worst, worst_f, lo, hi);
    return worst <= 2e-5 && worst <= 1.5 * worst_f && lo >= 0.0 && hi <= 180.0 ? 0 : 1;
}}
"#
    );
    let dir = std::env::temp_dir().join(format!("wd-sampled-atan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpp = dir.join("atan.cpp");
    std::fs::write(&cpp, src).unwrap();
    for (i, flags) in [
        &["-O2", "-std=c++17", "-ffp-contract=off", "-w"][..],
        &["-O2", "-std=c++17", "-ffp-contract=fast", "-march=native", "-w"][..],
    ]
    .iter()
    .enumerate()
    {
        let exe = dir.join(format!("atan{i}"));
        if !compile(&cpp, &exe, flags, &[]) {
            return;
        }
        let o = Command::new(&exe).output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        eprintln!("{flags:?}: worst |Δ| [degrees], range: {out}");
        assert!(o.status.success(), "{flags:?}: the polynomial azimuth is off: {out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The directional step of the adaptive comb (sampled.cu `samp_segment_step` with
/// WD_SAMP_ADAPT=2), compiled for the host (float, no contraction), against the Rust
/// `AdaptiveStep::segment_step` (f64) on the same float inputs: 20 000 random segments per shape
/// (spheres and cylinders; starts 0.3–300 m out, some along the axis, some through the source;
/// photons slower and faster than the frame's direct light). The float arithmetic differs from
/// f64 in its last bits: every step within 10⁻³ of the f64 one relative, 99 % within 10⁻⁵, except
/// on segments aimed at the source to within float rounding (impact parameter below 10⁻⁴ of the
/// distance, only among those built so): there b² = |p|²|d|² − (p·d)² is float noise, and a
/// segment that ends near the source (axis) gets the smallest step on one side and another bound
/// on the other. Either is a valid step (the comb is unbiased for any step chosen from the path);
/// the test counts them. A wrong bound, rate or clamp would be off by far more on many segments.
#[test]
fn device_directional_step_is_the_rust_step() {
    use warpdrive_photon::tabulate::gpu::SampParams;
    use warpdrive_photon::tabulate::sampled::AdaptiveStep;
    let body = [
        piece(KERNEL, "#define WD_TAG_TABULATE", "// Must match SampParams"),
        piece(KERNEL, "struct SampParams {", "// mod.rs Acceptance::weight"),
        piece(KERNEL, "#if WD_SAMP_ADAPT == 2", "// A segment's points into the warp's queue"),
    ]
    .concat();
    let pre = "#include <cmath>\n#include <cstdio>\n#include <cstring>\n#include <algorithm>\nusing std::min; using std::max;\n\
               #define __device__\n#define __forceinline__ inline\nstatic float __fdividef(float a, float b) { return a / b; }\n\
               static float rsqrtf(float x) { return 1.0f / sqrtf(x); }\n\
               static float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }\nstruct V3 { float x, y, z; };\n";
    let main = r#"
int main() {
    SampParams T;
    memset(&T, 0, sizeof T);
    for (int k = 0; k < 3; ++k) scanf("%f", &T.origin[k]);
    for (int k = 0; k < 3; ++k) scanf("%f", &T.axis[k]);
    scanf("%f %f %f %f %d", &T.ng_over_c, &T.cone, &T.inv_c, &T.step, &T.spherical);
    scanf("%f %f %f %f %f %f", &T.adapt_slope, &T.adapt_max, &T.adapt_inv_hr, &T.adapt_inv_hz, &T.adapt_inv_ht, &T.adapt_inv_slope);
    int m; scanf("%d", &m);
    for (int i = 0; i < m; ++i) {
        float x, y, z, a, b, c, len, ocm;
        scanf("%f %f %f %f %f %f %f %f", &x, &y, &z, &a, &b, &c, &len, &ocm);
        printf("%.9e\n", samp_segment_step(T, V3{x, y, z}, V3{a, b, c}, len, ocm));
    }
}
"#;
    let dir = std::env::temp_dir().join(format!("wd-sampled-step-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpp = dir.join("step.cpp");
    std::fs::write(&cpp, format!("{pre}{body}{main}")).unwrap();
    let exe = dir.join("step");
    // And with the grid's shape compiled in (WD_SAMP_SHAPE, the host's build): the same steps
    // bit for bit.
    let shaped = [dir.join("step-spheres"), dir.join("step-cylinders")];
    let flags = ["-O2", "-std=c++17", "-ffp-contract=off", "-w"];
    if !compile(&cpp, &exe, &flags, &["WD_SAMP_ADAPT=2"])
        || !compile(&cpp, &shaped[0], &flags, &["WD_SAMP_ADAPT=2", "WD_SAMP_SHAPE=1"])
        || !compile(&cpp, &shaped[1], &flags, &["WD_SAMP_ADAPT=2", "WD_SAMP_SHAPE=2"])
    {
        return;
    }
    let fl = |v: f64| f64::from(v as f32);
    let mut r = RandomStream::new(37, 0, 0);
    let mut u = move || f64::from(r.uniform());
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    for shape in [Shape::Spherical, Shape::Cylindrical] {
        let b = step_bins::step_bins(shape);
        let d = [0.3f64, -0.5, 0.812];
        let nd = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let mut f = Frame::new([1.0, -2.0, -51.93], [d[0] / nd, d[1] / nd, d[2] / nd], 1.35, 1.32);
        f.origin = f.origin.map(fl);
        f.axis = f.axis.map(fl);
        (f.ng_over_c, f.cone, f.inv_c) = (fl(f.ng_over_c), fl(f.cone), fl(f.inv_c));
        let mut a = AdaptiveStep::for_bins(&b, &f, 1.0).expect("room above 1 m");
        (a.slope, a.max, a.half_radial, a.half_axial, a.half_delay) =
            (fl(a.slope), fl(a.max), fl(a.half_radial), fl(a.half_axial), fl(a.half_delay));
        let mut input = String::new();
        for v in [f.origin, f.axis] {
            for x in v {
                write!(input, "{:e} ", x as f32).unwrap();
            }
        }
        writeln!(
            input,
            "{:e} {:e} {:e} 1 {}",
            f.ng_over_c as f32,
            f.cone as f32,
            f.inv_c as f32,
            i32::from(shape == Shape::Spherical)
        )
        .unwrap();
        // The kernel's parameters as the host sets them (tabulate/gpu.rs SampParams::set_adaptive).
        let mut tp = SampParams::default();
        tp.set_adaptive(Some(&a));
        writeln!(
            input,
            "{:e} {:e} {:e} {:e} {:e} {:e}",
            tp.adapt_slope, tp.adapt_max, tp.adapt_inv_hr, tp.adapt_inv_hz, tp.adapt_inv_ht, tp.adapt_inv_slope
        )
        .unwrap();
        let n = 20_000;
        writeln!(input, "{n}").unwrap();
        let mut segs = Vec::with_capacity(n);
        let mut aimed = Vec::with_capacity(n);
        for i in 0..n {
            let (ct, ph) = (2.0 * u() - 1.0, std::f64::consts::TAU * u());
            let st = (1.0 - ct * ct).sqrt();
            let mut dir = [st * ph.cos(), st * ph.sin(), ct];
            let (ct0, ph0, r0) = (2.0 * u() - 1.0, std::f64::consts::TAU * u(), 0.3 + 300.0 * u() * u());
            let st0 = (1.0 - ct0 * ct0).sqrt();
            let mut x0 = [
                f.origin[0] + r0 * st0 * ph0.cos(),
                f.origin[1] + r0 * st0 * ph0.sin(),
                f.origin[2] + r0 * ct0,
            ];
            match i % 10 {
                // Along the axis (cylinders: no radial or angular motion).
                0 => dir = f.axis,
                // Aimed at the source (the line through it).
                1 => {
                    let v = [f.origin[0] - x0[0], f.origin[1] - x0[1], f.origin[2] - x0[2]];
                    let nv = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
                    dir = v.map(|c| c / nv);
                }
                // At the source.
                2 => x0 = f.origin,
                _ => {}
            }
            let (len, ocm) = (60.0 * u() + 0.01, f.ng_over_c * (0.97 + 0.06 * u()));
            let x0 = x0.map(fl);
            let dir = dir.map(fl);
            let (len, ocm) = (fl(len), fl(ocm));
            writeln!(
                input,
                "{:e} {:e} {:e} {:e} {:e} {:e} {:e} {:e}",
                x0[0] as f32, x0[1] as f32, x0[2] as f32, dir[0] as f32, dir[1] as f32, dir[2] as f32, len as f32, ocm as f32
            )
            .unwrap();
            segs.push(a.segment_step(&f, shape, x0, dir, len, ocm));
            // The impact parameter relative to the distance (cylinders: across the axis).
            let mut p = [x0[0] - f.origin[0], x0[1] - f.origin[1], x0[2] - f.origin[2]];
            let mut q = dir;
            if shape == Shape::Cylindrical {
                let (up, uq) = (dot(p, f.axis), dot(q, f.axis));
                p = [p[0] - up * f.axis[0], p[1] - up * f.axis[1], p[2] - up * f.axis[2]];
                q = [q[0] - uq * f.axis[0], q[1] - uq * f.axis[1], q[2] - uq * f.axis[2]];
            }
            let cross = [p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0]];
            aimed.push(dot(cross, cross).sqrt() < 1e-4 * (dot(p, p) * dot(q, q)).sqrt());
        }
        let inp = dir.join("in.txt");
        std::fs::write(&inp, input).unwrap();
        let o = Command::new(&exe).stdin(std::fs::File::open(&inp).unwrap()).output().unwrap();
        assert!(o.status.success());
        let shaped = &shaped[usize::from(shape == Shape::Cylindrical)];
        let o2 = Command::new(shaped).stdin(std::fs::File::open(&inp).unwrap()).output().unwrap();
        assert!(
            o2.status.success() && o2.stdout == o.stdout,
            "{shape:?}: the shape compiled in gives other steps"
        );
        let got: Vec<f64> = String::from_utf8(o.stdout).unwrap().lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(got.len(), n);
        let all: Vec<f64> = got.iter().zip(&segs).map(|(g, w)| (g - w).abs() / w).collect();
        let rel: Vec<f64> = all.iter().zip(&aimed).map(|(&e, &a)| if a { 0.0 } else { e }).collect();
        let n_aimed = aimed.iter().filter(|&&a| a).count();
        let off = all.iter().zip(&aimed).filter(|(&e, &a)| a && e > 1e-3).count();
        eprintln!("{shape:?}: {n_aimed} segments aimed at the source, {off} of them more than 1e-3 off");
        assert!(n_aimed <= n / 8, "{n_aimed} segments aimed at the source of {n}");
        let worst = rel.iter().copied().fold(0.0, f64::max);
        let close = rel.iter().filter(|&&e| e <= 1e-5).count();
        let (lo, hi) = (
            segs.iter().copied().fold(f64::INFINITY, f64::min),
            segs.iter().copied().fold(0.0, f64::max),
        );
        eprintln!("{shape:?}: {n} segments, steps {lo}–{hi} m; worst relative difference {worst:.2e}, {close} within 1e-5");
        for (i, e) in rel.iter().enumerate().filter(|(_, &e)| e > 1e-3).take(5) {
            eprintln!("  segment {i}: device {} m, CPU {} m ({e:.2e})", got[i], segs[i]);
        }
        assert!(
            worst <= 1e-3 && close * 100 >= 99 * n,
            "{shape:?}: worst {worst:.2e}, {close} of {n} within 1e-5"
        );
        assert!(
            lo == a.min && (hi - 2.0 * a.max).abs() < 1e-6,
            "{shape:?}: steps from {lo} to {hi} m, not the whole range"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
