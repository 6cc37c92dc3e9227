//! The run's results as SDDS files beside the Parquet ones (`--sdds`), laid out as ELEGANT's
//! outputs are described in its manual (columns and units; SDDS units strings such as
//! `m$be$nc` for p = βγ): particles (final, watch points), lost particles, Twiss.

use crate::beam::{Particles, Reference};
use crate::program::Program;
use crate::sdds::{ColumnData, Data, Page, Parameter, Sdds, Value};

fn col(name: &str, units: &str, data: Data) -> ColumnData {
    ColumnData {
        name: name.into(),
        units: units.into(),
        data,
    }
}

fn par(name: &str, units: &str, value: Value) -> Parameter {
    Parameter {
        name: name.into(),
        units: units.into(),
        value,
    }
}

/// ELEGANT's particle columns for the rows `rows` of `p`: x [m], xp, y [m], yp, t [s] (time of
/// flight s/(βc)), p [βγ], particleID (bunch row + 1, as ELEGANT numbers from 1); parameters
/// Step, Pass, pCentral, Charge, Particles.
pub fn particles_page(p: &Particles, reference: &Reference, rows: &[usize], first_row: u64, pass: u32, charge: f64) -> Page {
    let pick = |c: &Vec<f64>| Data::Double(rows.iter().map(|&i| c[i]).collect());
    let t = rows
        .iter()
        .map(|&i| crate::lsc::time_of(p.s[i], p.delta[i], reference.p_central))
        .collect();
    let mom = rows.iter().map(|&i| reference.p_central * (1.0 + p.delta[i])).collect();
    let id = rows
        .iter()
        .map(|&i| i32::try_from(first_row + i as u64 + 1).unwrap_or(i32::MAX))
        .collect();
    Page {
        parameters: vec![
            par("Step", "", Value::Long(1)),
            par("Pass", "", Value::Long(i32::try_from(pass).unwrap_or(i32::MAX))),
            par("pCentral", "m$be$nc", Value::Double(reference.p_central)),
            par("Charge", "C", Value::Double(charge)),
            par("Particles", "", Value::Long(i32::try_from(rows.len()).unwrap_or(i32::MAX))),
        ],
        columns: vec![
            col("x", "m", pick(&p.x)),
            col("xp", "", pick(&p.xp)),
            col("y", "m", pick(&p.y)),
            col("yp", "", pick(&p.yp)),
            col("t", "s", Data::Double(t)),
            col("p", "m$be$nc", Data::Double(mom)),
            col("particleID", "", Data::Long(id)),
        ],
    }
}

/// `final.sdds`: the surviving particles (ELEGANT's final output holds those only; every
/// particle is in `final.parquet`).
pub fn final_file(p: &Particles, reference: &Reference, first_row: u64, passes: u32, charge: f64) -> Sdds {
    let rows: Vec<usize> = (0..p.len()).filter(|&i| p.lost_at[i] == 0).collect();
    Sdds {
        description: "warpdrive beam track: final particles".into(),
        contents: "final particle coordinates".into(),
        pages: vec![particles_page(p, reference, &rows, first_row, passes, charge)],
    }
}

/// `lost.sdds`: the lost particles with x … p where they were lost, s = the position of the
/// element's end, particleID, Pass, ElementName, ElementIndex (in the expanded line).
pub fn lost_file(p: &Particles, reference: &Reference, program: &Program, first_row: u64) -> Sdds {
    let lost = crate::losses::losses(p, first_row);
    let rows: Vec<usize> = lost.iter().map(|l| (l.particle - first_row) as usize).collect();
    let mut page = particles_page(p, reference, &rows, first_row, 0, 0.0);
    page.parameters.retain(|q| q.name == "pCentral");
    page.columns.insert(
        4,
        col(
            "s",
            "m",
            Data::Double(lost.iter().map(|l| crate::losses::element_end(program, l.element)).collect()),
        ),
    );
    page.columns.push(col(
        "Pass",
        "",
        Data::Long(lost.iter().map(|l| i32::try_from(l.pass).unwrap_or(i32::MAX)).collect()),
    ));
    page.columns.push(col(
        "ElementName",
        "",
        Data::Str(lost.iter().map(|l| program.names[l.element].clone()).collect()),
    ));
    page.columns.push(col(
        "ElementIndex",
        "",
        Data::Long(lost.iter().map(|l| i32::try_from(l.element).unwrap_or(i32::MAX)).collect()),
    ));
    Sdds {
        description: "warpdrive beam track: lost particles".into(),
        contents: "lost particle coordinates".into(),
        pages: vec![page],
    }
}

/// `twiss.sdds`: ELEGANT's twiss_output columns s, ElementName, ElementType, betax, alphax, psix
/// [rad], etax, etaxp, betay, alphay, psiy, and the parameters nux, nuy, dnux/dp, dnuy/dp,
/// alphac (0 for a line), circumference. (No vertical dispersion: the optics are uncoupled
/// and the lattices have no vertical bends.)
pub fn twiss_file(rows: &[crate::twiss::Row], s: &crate::twiss::Summary, reference: &Reference) -> Sdds {
    let tau = std::f64::consts::TAU;
    let d = |f: fn(&crate::twiss::Row) -> f64| Data::Double(rows.iter().map(f).collect());
    let page = Page {
        parameters: vec![
            par("pCentral", "m$be$nc", Value::Double(reference.p_central)),
            par("nux", "", Value::Double(s.tunes[0])),
            par("nuy", "", Value::Double(s.tunes[1])),
            par("dnux/dp", "", Value::Double(s.chromaticity[0])),
            par("dnuy/dp", "", Value::Double(s.chromaticity[1])),
            par("alphac", "", Value::Double(s.momentum_compaction.unwrap_or(0.0))),
            par("circumference", "m", Value::Double(s.circumference)),
        ],
        columns: vec![
            col("s", "m", d(|r| r.s)),
            col("ElementName", "", Data::Str(rows.iter().map(|r| r.name.clone()).collect())),
            col("ElementType", "", Data::Str(rows.iter().map(|r| r.kind.to_string()).collect())),
            col("betax", "m", d(|r| r.betx)),
            col("alphax", "", d(|r| r.alfx)),
            col("psix", "rad", Data::Double(rows.iter().map(|r| r.mux * tau).collect())),
            col("etax", "m", d(|r| r.dx)),
            col("etaxp", "", d(|r| r.dpx)),
            col("betay", "m", d(|r| r.bety)),
            col("alphay", "", d(|r| r.alfy)),
            col("psiy", "rad", Data::Double(rows.iter().map(|r| r.muy * tau).collect())),
        ],
    };
    Sdds {
        description: "warpdrive beam twiss".into(),
        contents: "Twiss parameters".into(),
        pages: vec![page],
    }
}

/// ELEGANT's `final` file of run_setup: the beam parameters after tracking as SDDS parameters
/// (means C*, RMS sizes S*, emittances ex, ey, Particles, pCentral, Pass).
pub fn beam_parameters(m: &crate::beam::Moments, reference: &Reference, passes: u32, total: usize) -> Sdds {
    let names = ["x", "xp", "y", "yp", "s", "delta"];
    let units = ["m", "", "m", "", "m", ""];
    let mut parameters = Vec::new();
    for k in 0..6 {
        parameters.push(par(&format!("C{}", names[k]), units[k], Value::Double(m.mean[k])));
    }
    for k in 0..6 {
        parameters.push(par(&format!("S{}", names[k]), units[k], Value::Double(m.rms(k))));
    }
    parameters.push(par("ex", "m", Value::Double(m.emittance(0))));
    parameters.push(par("ey", "m", Value::Double(m.emittance(1))));
    parameters.push(par("Particles", "", Value::Long(i32::try_from(m.alive).unwrap_or(i32::MAX))));
    parameters.push(par("Transmission", "", Value::Double(m.alive as f64 / total.max(1) as f64)));
    parameters.push(par("pCentral", "m$be$nc", Value::Double(reference.p_central)));
    parameters.push(par("Pass", "", Value::Long(i32::try_from(passes).unwrap_or(i32::MAX))));
    Sdds {
        description: "warpdrive beam run: final beam parameters".into(),
        contents: "final beam parameters".into(),
        pages: vec![Page {
            parameters,
            columns: Vec::new(),
        }],
    }
}
