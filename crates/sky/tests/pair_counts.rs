//! Pair counts equal, integer for integer, a brute-force O(n²) double-precision count with the
//! same edge rule (haversine separations, independent of the unit vectors and cell lists), on
//! the real IC86-2011 events — including the zero-separation and on-edge pairs the spec warns
//! about — on random subsets of them, on scrambled trials, and on synthetic skies that stress
//! the poles, the RA wrap-around and wide bins.

use warpdrive_core::data::test_data_dir;
use warpdrive_core::RandomStream;
use warpdrive_sky::bins::AngularBins;
use warpdrive_sky::count::{brute_force, count_pairs, cumulative, observed, Workspace};
use warpdrive_sky::cuts::{default_cuts, resolve, EnergyCut};
use warpdrive_sky::events::{read_events, synthetic, ColumnNames, Event};
use warpdrive_sky::sample::Sample;
use warpdrive_sky::sphere::separation_deg;
use warpdrive_sky::trials::trial_turns;

fn ic86(name: &str) -> Option<Vec<Event>> {
    let data = test_data_dir(env!("CARGO_MANIFEST_DIR"))?;
    let p = data.join("events/ic86_2011_ps_release").join(name);
    Some(read_events(&p, &ColumnNames::default()).unwrap())
}

/// Counts of the cell-list counter and of brute force for `events` at their own RA.
fn both(events: &[Event], bins: &AngularBins, cuts: &[EnergyCut]) -> (Vec<u64>, Vec<u64>) {
    let rc = resolve(events, cuts).unwrap();
    let levels: Vec<u8> = events.iter().map(|e| rc.level(e.energy)).collect();
    let reference = brute_force(events, &levels, rc.levels(), bins);
    let s = Sample::new(events, bins.clone(), rc).unwrap();
    (observed(&s), reference)
}

#[test]
fn energy_cut_thresholds_follow_the_tie_rule() {
    let (Some(up), Some(down)) = (ic86("upgoing_events.txt"), ic86("downgoing_events.txt")) else {
        return;
    };
    assert_eq!((up.len(), down.len()), (69_227, 69_095));
    // Spec §3.2: upgoing top 10/1/0.1 % ↔ log10 E ≥ 3.4/3.9/4.5 (7 026/762/82 events),
    // downgoing ≥ 5.3/5.8/6.2 (7 918/825/84).
    let r = resolve(&up, &default_cuts()).unwrap();
    assert_eq!(r.thresholds, vec![3.4, 3.9, 4.5]);
    assert_eq!(r.counts, vec![69_227, 7_026, 762, 82]);
    let r = resolve(&down, &default_cuts()).unwrap();
    assert_eq!(r.thresholds, vec![5.3, 5.8, 6.2]);
    assert_eq!(r.counts, vec![69_095, 7_918, 825, 84]);
}

#[test]
fn first_8000_upgoing_events_with_ties_and_zero_separations() {
    let Some(up) = ic86("upgoing_events.txt") else { return };
    let ev = &up[..8000];
    // The subset holds the pitfalls of spec §3.2: pairs on the 1° and 5° edges, identical positions.
    let (mut on1, mut on5, mut zero) = (0, 0, 0);
    for i in 0..ev.len() {
        for j in i + 1..ev.len() {
            let psi = separation_deg(ev[i].ra, ev[i].dec, ev[j].ra, ev[j].dec);
            on1 += usize::from((psi - 1.0).abs() < 1e-6);
            on5 += usize::from((psi - 5.0).abs() < 1e-6);
            zero += usize::from(psi == 0.0);
        }
    }
    // The spec quotes 17 and 28 edge pairs (matched) and 9 zero-separation pairs; the file has
    // 11 pairs of rows with identical RA and Dec strings in its first 8 000 events (counted
    // independently from the text), so 11 is the right number for this subset.
    assert_eq!((on1, on5, zero), (17, 28, 11), "edge and zero-separation pairs of the subset");
    let bins = AngularBins::uniform(20, 0.25).unwrap();
    let (ours, reference) = both(ev, &bins, &default_cuts());
    assert_eq!(ours, reference);
    // The edge rule counts every tie as inside: N(≤1°) = 4 677 pairs below 1° − 10⁻⁶° plus the
    // 17 on the edge, N(≤5°) = 116 339 + 28 (both decompositions counted independently with
    // numpy's haversine). The spec's 4 689 and 116 358 come from acos(cos Ψ) in float64, which
    // decides ties by rounding noise (numpy acos here: 4 691 and 116 358).
    assert_eq!(ours[3], 4_677 + 17, "pairs ≤ 1°");
    assert_eq!(ours[19], 116_339 + 28, "pairs ≤ 5°");
}

#[test]
fn random_subsets_of_both_hemispheres_and_scrambled_trials() {
    let (Some(up), Some(down)) = (ic86("upgoing_events.txt"), ic86("downgoing_events.txt")) else {
        return;
    };
    let all: Vec<Event> = up.into_iter().chain(down).collect();
    let bins = AngularBins::uniform(20, 0.25).unwrap();
    for subset in 0..3u64 {
        let mut r = RandomStream::new(11, 1, subset);
        let ev: Vec<Event> = (0..6000)
            .map(|_| all[(r.uniform_f64() * all.len() as f64) as usize % all.len()])
            .collect();
        let (ours, reference) = both(&ev, &bins, &default_cuts());
        assert_eq!(ours, reference, "subset {subset}");
        // One scrambled trial of the subset: brute force on the scrambled RAs.
        let rc = resolve(&ev, &default_cuts()).unwrap();
        let s = Sample::new(&ev, bins.clone(), rc.clone()).unwrap();
        let mut turns = Vec::new();
        trial_turns(&s, 5, subset, &mut turns);
        let mut hist = vec![0u64; s.hist_len()];
        count_pairs(&s, &turns, &mut Workspace::default(), &mut hist);
        let ours = cumulative(&hist, rc.levels(), bins.len());
        let mut scrambled = ev.clone();
        for (p, &e) in s.order.iter().enumerate() {
            scrambled[e as usize].ra = turns[p] * 360.0;
        }
        let levels: Vec<u8> = ev.iter().map(|e| rc.level(e.energy)).collect();
        assert_eq!(
            ours,
            brute_force(&scrambled, &levels, rc.levels(), &bins),
            "trial of subset {subset}"
        );
    }
}

#[test]
fn synthetic_skies_poles_wraparound_and_wide_bins() {
    let cuts = [EnergyCut::TopFraction(0.5), EnergyCut::TopFraction(0.05)];
    // Isotropic.
    let iso = synthetic(4000, 21);
    let bins = AngularBins::uniform(20, 0.25).unwrap();
    let (a, b) = both(&iso, &bins, &cuts);
    assert_eq!(a, b);
    assert!(a[19] > 100, "enough pairs to test: {}", a[19]);
    // Clustered at the poles and across RA = 0/360, with exact duplicates and on-edge offsets.
    let mut ev = Vec::new();
    let mut r = RandomStream::new(3, 2, 0);
    for k in 0..1500 {
        let dec = if k % 2 == 0 {
            90.0 - 6.0 * r.uniform_f64()
        } else {
            -90.0 + 6.0 * r.uniform_f64()
        };
        let ra = (360.0 + 4.0 * (r.uniform_f64() - 0.5)) % 360.0;
        ev.push(Event {
            ra,
            dec,
            energy: r.uniform_f64(),
            ang_err: None,
        });
    }
    for k in 0..300 {
        let dec = -40.0 + 0.1 * f64::from(k % 50);
        ev.push(Event {
            ra: 359.9,
            dec,
            energy: 1.0,
            ang_err: None,
        });
        ev.push(Event {
            ra: 0.1,
            dec: dec + 0.25,
            energy: 1.0,
            ang_err: None,
        });
        ev.push(Event {
            ra: 359.9,
            dec,
            energy: 2.0,
            ang_err: None,
        });
    }
    ev.push(Event {
        ra: 10.0,
        dec: 90.0,
        energy: 0.0,
        ang_err: None,
    });
    ev.push(Event {
        ra: 200.0,
        dec: 90.0,
        energy: 0.0,
        ang_err: None,
    });
    let (a, b) = both(&ev, &bins, &cuts);
    assert_eq!(a, b);
    // Non-uniform and wide bins up to 60°.
    let wide = AngularBins::new(vec![0.1, 0.5, 2.0, 10.0, 30.0, 60.0]).unwrap();
    let (a, b) = both(&iso[..1500], &wide, &cuts);
    assert_eq!(a, b);
    let (a, b) = both(&ev, &wide, &cuts);
    assert_eq!(a, b);
}
