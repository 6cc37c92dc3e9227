//! Print the CUDA source that `beam track --device cuda` generates for a lattice (the fused
//! map kernels of gpu.rs `generate`, with the reference particle the RF cavities need), for
//! static analysis of the kernels (NVRTC to a cubin, nvdisasm):
//!   cargo run -p warpdrive-beam --example maps_source -- LATTICE.lte [P_CENTRAL] > maps.cu
//! (see docs/performance/beam.md, "Instruction mix of the ring's kernel").
//! Compile it as the binary does (fast: `-DWD_FAST_MAPS --fmad=true …`; see core kernels.rs).
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: maps_source LATTICE.lte [P_CENTRAL]");
    let p_central: f64 = args.get(2).map_or(1956.951, |p| p.parse().expect("P_CENTRAL: a number"));
    // As `beam track` without an aperture (+∞: the open form of the run kernels, gpu.rs
    // `generate`); WARPDRIVE_APERTURE_SET=1 gives the kernels of a finite aperture,
    // WARPDRIVE_BEAM_ROLL=1 the rolled ones (as `beam track` with it).
    let open = std::env::var("WARPDRIVE_APERTURE_SET").map_or(true, |v| v != "1");
    let text = std::fs::read_to_string(path).expect("read the lattice");
    let lattice = warpdrive_beam::lattice::parse(&text, path, None).expect("parse the lattice");
    let reference = warpdrive_beam::beam::Reference::electron(p_central);
    let program = warpdrive_beam::program::Program::compile_with(&lattice, Some(&reference));
    let shape = warpdrive_beam::gpu::Shape {
        roll: warpdrive_beam::gpu::roll_from_env(),
        ..warpdrive_beam::gpu::Shape::new(open)
    };
    let src = warpdrive_beam::gpu::generate(&program, shape).expect("generate");
    let mut kernels: Vec<&String> = src.run_kernels.values().collect();
    kernels.sort();
    eprintln!("{} constants, kernels {kernels:?}", src.constants.len());
    print!("{}", src.source);
}
