//! Where does the CPU evaluation lose when it runs on two threads of one process? (Issue #34's
//! 2-core scaling: two single-threaded processes on two cores of the GPU host gave 2x the rate of
//! one, two threads of one process ~1.1-1.5x.) Times, fastest of five after one untimed call,
//! one and two threads alternating:
//!   alloc    `SplineTable::evaluate_many` (the library call: a fresh output each call)
//!   prealloc the same chunks into an output allocated and touched once, outside the timing
//!   init     prealloc with one evaluator per worker (`for_each_init`) instead of one per chunk
//!   threads  two plain OS threads, each one half of the points, no rayon
//!
//!   cargo run --release -p warpdrive-spline --example thread_scaling -- TABLE.fits [POINTS]
use rayon::prelude::*;
use std::time::Instant;
use warpdrive_spline::evaluator::Evaluator;
use warpdrive_spline::points::CPU_CHUNK;
use warpdrive_spline::SplineTable;

fn fastest(pool: &rayon::ThreadPool, f: &(dyn Fn() + Sync)) -> f64 {
    pool.install(f);
    (0..5)
        .map(|_| {
            let t0 = Instant::now();
            pool.install(f);
            t0.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let t = SplineTable::read(std::path::Path::new(&args[1])).expect("table");
    let n: usize = args.get(2).map_or(4_000_000, |s| s.parse().expect("points"));
    let nd = t.ndim();
    let pts = warpdrive_spline::eval::uniform_points(&t, n, 1);
    let out = std::sync::Mutex::new(vec![1.0f64; n]);
    for round in 0..2 {
        for threads in [1usize, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
            let alloc = fastest(&pool, &|| {
                std::hint::black_box(t.evaluate_many(&pts));
            });
            let prealloc = fastest(&pool, &|| {
                let mut o = out.lock().expect("out");
                pts.par_chunks(nd * CPU_CHUNK).zip(o.par_chunks_mut(CPU_CHUNK)).for_each(|(x, o)| {
                    Evaluator::new(&t).values(x, o);
                });
            });
            let init = fastest(&pool, &|| {
                let mut o = out.lock().expect("out");
                pts.par_chunks(nd * CPU_CHUNK)
                    .zip(o.par_chunks_mut(CPU_CHUNK))
                    .for_each_init(|| Evaluator::new(&t), |e, (x, o)| e.values(x, o));
            });
            let plain = {
                let f = || {
                    let mut o = out.lock().expect("out");
                    let half = (n / threads).div_ceil(CPU_CHUNK) * CPU_CHUNK;
                    std::thread::scope(|s| {
                        for (x, o) in pts.chunks(nd * half).zip(o.chunks_mut(half)) {
                            let t = &t;
                            s.spawn(move || {
                                let mut e = Evaluator::new(t);
                                for (x, o) in x.chunks(nd * CPU_CHUNK).zip(o.chunks_mut(CPU_CHUNK)) {
                                    e.values(x, o);
                                }
                            });
                        }
                    });
                };
                f();
                (0..5)
                    .map(|_| {
                        let t0 = Instant::now();
                        f();
                        t0.elapsed().as_secs_f64()
                    })
                    .fold(f64::INFINITY, f64::min)
            };
            let r = |s: f64| n as f64 / s;
            println!(
                "round {round} threads {threads}: alloc {:.3e}  prealloc {:.3e}  init {:.3e}  threads {:.3e} values/s",
                r(alloc),
                r(prealloc),
                r(init),
                r(plain)
            );
        }
    }
}
