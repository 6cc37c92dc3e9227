//! The navigator's CUDA code (`kernels/geo/*.cuh`, `trace.cu`) compiled for the host
//! (`geo_host_twin.cpp`) against the Rust navigator: with the host's libm both sides call the
//! same `atan2` and `sin`, so every distance, safety, volume and end point must be the same bits.
//! This checks the translation of every solid, of the root scan that replaces the CPU's sorted
//! root list, and of the navigator, without a GPU; the device's own arithmetic (CUDA's `atan2`,
//! `sin`) is what `warpdrive gpu-check --domain em` adds.
//!
//! Needs a C++ compiler (`c++`, or `$CXX`); skipped without one unless
//! `WARPDRIVE_REQUIRE_DATA=1`.

mod common;
use common::{bytes, compile_once};
use std::path::{Path, PathBuf};
use std::process::Command;
use warpdrive_em::geo::device::{flatten_solids, DeviceGeometry};
use warpdrive_em::geo::gpu::{solid_distances_cpu, trace_rays_cpu};
use warpdrive_em::geo::trace::Trace;
use warpdrive_em::geo::{zoo, Aabb, Vec3};

fn write_geometry(path: &Path, g: &DeviceGeometry) {
    let mut f = Vec::new();
    for n in [
        g.solids.len(),
        g.pool.len(),
        g.logical.len(),
        g.placements.len(),
        g.world as usize,
        g.bvh_nodes.len(),
        g.bvh_items.len(),
        g.bvh_root.len(),
    ] {
        f.extend_from_slice(&(n as u64).to_le_bytes());
    }
    f.extend_from_slice(bytes(&g.solids));
    f.extend_from_slice(bytes(&g.pool));
    f.extend_from_slice(bytes(&g.logical));
    f.extend_from_slice(bytes(&g.placements));
    f.extend_from_slice(bytes(&g.bvh_nodes));
    f.extend_from_slice(bytes(&g.bvh_items));
    f.extend_from_slice(bytes(&g.bvh_root));
    std::fs::write(path, f).unwrap();
}

fn run(exe: &Path, dir: &Path, g: &DeviceGeometry, mode: u64, arg: u64, p: &[Vec3], d: &[Vec3]) -> Vec<u8> {
    let (gp, rp, op) = (dir.join("geometry.bin"), dir.join("rays.bin"), dir.join("out.bin"));
    write_geometry(&gp, g);
    let mut f = Vec::new();
    for v in [mode, p.len() as u64, arg] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    for v in p.iter().chain(d) {
        for x in [v.x, v.y, v.z] {
            f.extend_from_slice(&x.to_le_bytes());
        }
    }
    std::fs::write(&rp, f).unwrap();
    let o = Command::new(exe).arg(&gp).arg(&rp).arg(&op).output().unwrap();
    assert!(o.status.success(), "host twin: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::read(&op).unwrap()
}

fn f64_at(b: &[u8], at: &mut usize) -> f64 {
    let v = f64::from_le_bytes(b[*at..*at + 8].try_into().unwrap());
    *at += 8;
    v
}
fn i32_at(b: &[u8], at: &mut usize) -> i32 {
    let v = i32::from_le_bytes(b[*at..*at + 4].try_into().unwrap());
    *at += 4;
    v
}

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wd-geo-twin-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every specimen solid, 20 000 rays each from a box 20 % larger than its bounding box: the
/// host-built twin's distance, safety and membership equal the CPU's bit for bit.
#[test]
fn solid_twins_equal_the_cpu_bit_for_bit() {
    let dir = tempdir("solids");
    let Some(exe) = compile_once("geo_host_twin") else { return };
    let n = 20_000u64;
    for (k, s) in zoo::specimens().iter().enumerate() {
        let b = s.solids.bounding_box(s.id);
        let grow = (b.max - b.min) * 0.2;
        let e = Aabb {
            min: b.min - grow,
            max: b.max + grow,
        };
        let (p, d) = zoo::rays_in_box(&e, n as usize, 77 + k as u64);
        let (records, pool) = flatten_solids(&s.solids.solids).unwrap();
        let g = DeviceGeometry {
            solids: records,
            pool,
            ..DeviceGeometry::default()
        };
        let out = run(&exe, &dir, &g, 1, u64::from(s.id), &p, &d);
        let (cd, cs, ci) = solid_distances_cpu(&s.solids, s.id, &p, &d);
        let mut at = 0;
        let mut same = 0;
        let mut first = None;
        for i in 0..n as usize {
            let (dist, safe, inside) = (f64_at(&out, &mut at), f64_at(&out, &mut at), i32_at(&out, &mut at) != 0);
            if dist.to_bits() == cd[i].to_bits() && safe.to_bits() == cs[i].to_bits() && inside == ci[i] {
                same += 1;
            } else if first.is_none() {
                first = Some(format!(
                    "point {i} {:?} dir {:?}: twin ({dist}, {safe}, {inside}) CPU ({}, {}, {})",
                    p[i], d[i], cd[i], cs[i], ci[i]
                ));
            }
        }
        assert_eq!(same, n as usize, "{}: {same} of {n} equal; {}", s.name, first.unwrap_or_default());
        assert!(
            ci.iter().filter(|&&x| x).count() > (n / 50) as usize,
            "{}: the rays must start inside too",
            s.name
        );
    }
}

/// 20 000 rays walked through tests/data/nested.gdml (every solid kind, nested, touching and
/// rotated volumes, an assembly): the twin's walk equals the CPU's bit for bit.
#[test]
fn navigator_twin_walks_nested_gdml_as_the_cpu() {
    let dir = tempdir("nested");
    let Some(exe) = compile_once("geo_host_twin") else { return };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nested.gdml");
    let gdml = warpdrive_em::gdml::read(&path).unwrap();
    let g = DeviceGeometry::new(&gdml.tree).unwrap();
    let (n, max_steps) = (20_000usize, 64usize);
    let (p, d) = zoo::rays_at_placements(&gdml.tree, n, 5);
    let out = run(&exe, &dir, &g, 0, max_steps as u64, &p, &d);
    let cpu = trace_rays_cpu(&gdml.tree, &p, &d, max_steps);
    let mut at = 0;
    let (mut crossings, mut entered_daughters) = (0, 0);
    for (i, c) in cpu.iter().enumerate() {
        let start = i32_at(&out, &mut at);
        let safety = f64_at(&out, &mut at);
        let k = u32::from_le_bytes(out[at..at + 4].try_into().unwrap()) as usize;
        at += 4;
        let end = Vec3::new(f64_at(&out, &mut at), f64_at(&out, &mut at), f64_at(&out, &mut at));
        let mut steps = Vec::new();
        for j in 0..max_steps {
            let (m, code) = (f64_at(&out, &mut at), i32_at(&out, &mut at));
            if j < k {
                steps.push((m, code));
            }
        }
        let twin = Trace { start, safety, steps, end };
        assert_eq!(&twin, c, "ray {i} from {:?} along {:?}", p[i], d[i]);
        crossings += c.steps.len();
        entered_daughters += c.steps.iter().filter(|s| s.1 >= 0).count();
    }
    eprintln!("{n} rays, {crossings} crossings, {entered_daughters} into placed volumes: twin = CPU");
    // Each ray is aimed at a placed volume's box; most cross one or more placed volumes.
    assert!(
        entered_daughters > n,
        "the rays must cross the placed volumes ({entered_daughters})"
    );
}

/// 10 000 rays walked through a generated detector of 2000 jittered, rotated daughters in one
/// level with containers of 27 (`geo::crowd`): the twin's per-level trees (`first_holding`,
/// the tree walks of `find_next_step` and `safety`) equal the CPU's bit for bit.
#[test]
fn navigator_twin_walks_a_crowded_level_as_the_cpu() {
    use warpdrive_em::geo::crowd::{build, Crowd, Layout};
    let dir = tempdir("crowd");
    let Some(exe) = compile_once("geo_host_twin") else { return };
    let gdml = build(&Crowd {
        daughters: 2000,
        layout: Layout::Jittered,
        nested: 27,
        seed: 8,
    })
    .unwrap();
    let g = DeviceGeometry::new(&gdml.tree).unwrap();
    assert!(
        g.bvh_root.iter().filter(|&&r| r != u32::MAX).count() >= 2,
        "the hall and the containers have trees"
    );
    let (n, max_steps) = (10_000usize, 256usize);
    let (p, d) = zoo::rays_at_placements(&gdml.tree, n, 6);
    let out = run(&exe, &dir, &g, 0, max_steps as u64, &p, &d);
    let cpu = trace_rays_cpu(&gdml.tree, &p, &d, max_steps);
    let mut at = 0;
    let mut crossings = 0;
    for (i, c) in cpu.iter().enumerate() {
        let start = i32_at(&out, &mut at);
        let safety = f64_at(&out, &mut at);
        let k = u32::from_le_bytes(out[at..at + 4].try_into().unwrap()) as usize;
        at += 4;
        let end = Vec3::new(f64_at(&out, &mut at), f64_at(&out, &mut at), f64_at(&out, &mut at));
        let mut steps = Vec::new();
        for j in 0..max_steps {
            let (m, code) = (f64_at(&out, &mut at), i32_at(&out, &mut at));
            if j < k {
                steps.push((m, code));
            }
        }
        let twin = Trace { start, safety, steps, end };
        assert_eq!(&twin, c, "ray {i} from {:?} along {:?}", p[i], d[i]);
        crossings += c.steps.len();
    }
    eprintln!("{n} rays, {crossings} crossings through the crowd: twin = CPU");
    assert!(crossings > 4 * n, "the rays must cross the daughters ({crossings})");
}
