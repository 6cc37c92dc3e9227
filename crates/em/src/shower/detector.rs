//! EM showers in a GDML detector on the CPU: the stepping loop of [`super::transport`] run in a
//! [`crate::geo::VolumeTree`] through the [`Navigator`], with energy deposit per physical volume
//! and per material, summed over events.
//!
//! * Geometry: the step is limited by the navigator's distance to the next boundary of the
//!   deepest volume holding the track ([`Navigator::find_next_step`]); a crossing moves the
//!   track onto the boundary plus [`crate::geo::navigator::PUSH`] and locates it again
//!   ([`Navigator::relocate`]); leaving the world volume is an escape. The geometry works in mm,
//!   the shower in cm: positions are converted at each call (×10, ÷10; rounding ≲ 1e-13 mm at a
//!   metre, far below the 1e-9 mm push).
//! * Materials: every distinct GDML material a volume uses gets its own shower material
//!   ([`crate::gdml::materials::GdmlMaterial::shower_material`]) and physics tables
//!   ([`MaterialPhysics`]); one lighter than [`VACUUM_DENSITY`] (Geant4's `G4_Galactic`,
//!   1e-25 g/cm³) is vacuum: tracks fly through it straight to the next boundary without
//!   interactions or loss (its mean free paths exceed 10¹⁵ cm).
//! * Volumes: a tally slot per volume instance (Geant4's touchable: the path of placements from
//!   the world down), so a `Lead` placed once inside a `Layer` placed 50 times gives 50 slots.
//!   Slots are numbered in depth-first pre-order (world = 0): with T(L) the number of instances
//!   in the subtree of logical volume L (1 + Σ over its daughters), a daughter placement k of a
//!   mother has the offset o(k) = 1 + Σ T(earlier daughters), and a path's slot is the sum of its
//!   placements' offsets, computed in O(depth) per deposit. The count T(world) is bounded by
//!   [`MAX_VOLUMES`] before anything is allocated.
//! * Randomness and ids: as in the slab calorimeter (the primary's id from the event number,
//!   one Philox stream per track), so a GDML file equal to a slab calorimeter draws the same
//!   numbers along the same decisions.
//! * Sums: per event in fixed point ([`super::transport::FIXED_SCALE`]), exactly; over events
//!   the deposits in 128-bit integers (exact, order-free) and their squares in f64 added in
//!   event order (events are run in parallel in batches of [`BATCH`] and reduced in order), so
//!   a run does not depend on the number of threads.

use super::cuts::{EnergyCuts, RangeCuts};
use super::physics::MaterialPhysics;
use super::run::mean_rms_from_sums;
use super::tables::TableOptions;
use super::transport::StepEnd;
use super::transport::{primary_id, track_event, EventTally, Hit, Primary, ShowerGeometry, FIXED_SCALE};
use crate::field::propagate::{propagate, propagate_in_map, ChargedTrack, FieldAccuracy};
use crate::field::{Field, FieldMap, UniformField};
use crate::gdml::Gdml;
use crate::geo::{Boundary, Navigator, Vec3, VolumePath};
use rayon::prelude::*;
use warpdrive_core::error::InputError;
use warpdrive_core::progress::Progress;

/// Materials lighter than this are vacuum [g/cm³] (air, 1.2e-3, is not; `G4_Galactic` is).
pub const VACUUM_DENSITY: f64 = 1e-10;
/// Events run in parallel between two in-order reductions.
pub const BATCH: u64 = 256;
/// Most volume instances (tally slots) a detector may have: each has a word per event of a batch.
pub const MAX_VOLUMES: u64 = 1 << 20;

/// One tally slot: a volume instance.
#[derive(Clone, Debug, PartialEq)]
pub struct VolumeInfo {
    /// Placement names from the world down, each with its copy number: `World/Calo/Layer[3]/Pb`.
    pub path: String,
    /// The deepest placement (`None` for the world).
    pub placement: Option<u32>,
    pub logical: u32,
    pub copy: i32,
    /// Index into `Gdml::materials`.
    pub material: usize,
}

/// Per placement its slot offset (see the module doc) and the number of slots, or an error when
/// there are more than [`MAX_VOLUMES`].
pub fn slot_offsets(gdml: &Gdml) -> Result<(Vec<u64>, u64), InputError> {
    let tree = &gdml.tree;
    // T(L) by memoised depth-first recursion over the (acyclic) volume graph, saturating.
    fn count(tree: &crate::geo::VolumeTree, l: u32, memo: &mut [Option<u64>]) -> u64 {
        if let Some(c) = memo[l as usize] {
            return c;
        }
        let mut c = 1u64;
        for k in tree.daughters(l) {
            let d = tree.placements[k as usize].logical;
            c = c.saturating_add(count(tree, d, memo));
        }
        memo[l as usize] = Some(c);
        c
    }
    let mut memo = vec![None; tree.logical.len()];
    let total = count(tree, tree.world, &mut memo);
    if total > MAX_VOLUMES {
        return Err(InputError::file(
            &gdml.path,
            format!(
                "{} volume instances (paths of placements) are more than the {MAX_VOLUMES} that can be scored",
                if total == u64::MAX {
                    "more than 1.8e19".to_string()
                } else {
                    total.to_string()
                }
            ),
        ));
    }
    let mut offsets = vec![0u64; tree.placements.len()];
    for l in 0..tree.logical.len() as u32 {
        let mut o = 1u64;
        for k in tree.daughters(l) {
            offsets[k as usize] = o;
            o += count(tree, tree.placements[k as usize].logical, &mut memo);
        }
    }
    Ok((offsets, total))
}

/// A GDML geometry with the shower physics of its materials.
#[derive(Clone, Debug)]
pub struct DetectorPhysics {
    pub gdml: Gdml,
    pub range_cuts: RangeCuts,
    pub table_options: TableOptions,
    /// Per GDML material (`gdml.materials` order): index into `materials`, `None` for vacuum.
    pub material_of: Vec<Option<usize>>,
    /// The physics of the non-vacuum materials, in order of first appearance in `gdml.materials`.
    pub materials: Vec<MaterialPhysics>,
    /// Per placement: its slot offset ([`slot_offsets`]).
    pub offsets: Vec<u64>,
    volumes: usize,
    /// The magnetic field [T] in the world's frame, uniform or a map; `None` (also for a
    /// uniform B = 0): charged tracks go straight, as without a field, bit for bit.
    pub field: Option<Field>,
    /// The accuracy of curved-path navigation (delta chord, delta intersection) [mm].
    pub accuracy: FieldAccuracy,
    /// Per logical volume: whether it records hits ([`super::transport::Hit`]).
    pub sensitive: Vec<bool>,
}

/// The shower materials of a GDML geometry: per GDML material its index among the non-vacuum
/// ones (or `None`), and those. Errors name the file (a material without a mean excitation
/// energy, or out of range).
pub fn shower_materials(gdml: &Gdml) -> Result<(Vec<Option<usize>>, Vec<super::material::ShowerMaterial>), InputError> {
    let mut of = Vec::with_capacity(gdml.materials.len());
    let mut list = Vec::new();
    for m in &gdml.materials {
        if m.density < VACUUM_DENSITY {
            of.push(None);
            continue;
        }
        let sm = m.shower_material().map_err(|e| InputError::file(&gdml.path, e))?;
        of.push(Some(list.len()));
        list.push(sm);
    }
    Ok((of, list))
}

impl DetectorPhysics {
    /// Build the tables of every non-vacuum material (in parallel, order kept).
    pub fn build(gdml: Gdml, range_cuts: RangeCuts, table_options: TableOptions) -> Result<Self, InputError> {
        let (material_of, list) = shower_materials(&gdml)?;
        Self::build_from(gdml, material_of, &list, range_cuts, table_options)
    }

    /// [`Self::build`] with the shower materials given (`material_of` and `list` as
    /// [`shower_materials`] returns them; e.g. with a built-in material substituted for the
    /// file's one, to compare geometries with the same physics).
    pub fn build_from(
        gdml: Gdml,
        material_of: Vec<Option<usize>>,
        list: &[super::material::ShowerMaterial],
        range_cuts: RangeCuts,
        table_options: TableOptions,
    ) -> Result<Self, InputError> {
        let (offsets, volumes) = slot_offsets(&gdml)?;
        if material_of.len() != gdml.materials.len() || material_of.iter().flatten().any(|&i| i >= list.len()) {
            return Err(InputError::file(&gdml.path, "material_of does not match the geometry's materials"));
        }
        let materials = list
            .par_iter()
            .map(|m| MaterialPhysics::build(m, EnergyCuts::new(m, &range_cuts), &table_options))
            .collect();
        Ok(DetectorPhysics {
            range_cuts,
            table_options,
            material_of,
            materials,
            sensitive: gdml
                .tree
                .logical
                .iter()
                .map(|l| l.auxiliary.iter().any(|(t, _)| t == "SensDet"))
                .collect(),
            offsets,
            volumes: volumes as usize,
            field: None,
            accuracy: FieldAccuracy::default(),
            gdml,
        })
    }

    /// Set the uniform field [T] (a zero field is no field).
    pub fn set_field(&mut self, b: [f64; 3]) {
        self.field = (b != [0.0; 3]).then(|| {
            Field::Uniform(UniformField {
                b: Vec3::new(b[0], b[1], b[2]),
            })
        });
    }

    /// Use a field map (it must cover the world: refused otherwise, naming the map and world;
    /// a map of zeros is no field).
    pub fn set_field_map(&mut self, map: std::sync::Arc<FieldMap>) -> Result<(), InputError> {
        let tree = &self.gdml.tree;
        let world = &tree.logical[tree.world as usize];
        map.check_covers(&tree.solids.bounding_box(world.solid), &world.name)?;
        // A map of zeros is no field (as a uniform B = 0): the straight loop.
        self.field = (map.b_max > 0.0).then_some(Field::Map(map));
        Ok(())
    }

    /// Mark the named logical volumes sensitive, in addition to those with a GDML `SensDet`
    /// auxiliary; an unknown name is an error naming the file and the logical volumes.
    pub fn set_sensitive(&mut self, names: &[String]) -> Result<(), String> {
        let tree = &self.gdml.tree;
        for n in names {
            match tree.logical.iter().position(|l| l.name == *n) {
                Some(i) => self.sensitive[i] = true,
                None => {
                    let known: Vec<&str> = tree.logical.iter().map(|l| l.name.as_str()).take(20).collect();
                    return Err(format!(
                        "'{n}' is not a logical volume of {} (its volumes: {}{})",
                        self.gdml.path.display(),
                        known.join(", "),
                        if tree.logical.len() > 20 { ", …" } else { "" }
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether any volume records hits.
    #[must_use]
    pub fn any_sensitive(&self) -> bool {
        self.sensitive.iter().any(|&s| s)
    }

    fn nav(&self) -> Navigator<'_> {
        Navigator::new(&self.gdml.tree)
    }

    /// Number of tally slots (volume instances).
    #[must_use]
    pub fn volumes(&self) -> usize {
        self.volumes
    }

    /// Every slot in order (depth-first pre-order from the world).
    #[must_use]
    pub fn volume_list(&self) -> Vec<VolumeInfo> {
        let tree = &self.gdml.tree;
        let mut out = Vec::with_capacity(self.volumes);
        let world = &tree.logical[tree.world as usize];
        // (logical, path so far) on an explicit stack, daughters pushed in reverse (pre-order).
        out.push(VolumeInfo {
            path: world.name.clone(),
            placement: None,
            logical: tree.world,
            copy: 0,
            material: world.material as usize,
        });
        let mut stack: Vec<(u32, String)> = tree.daughters(tree.world).rev().map(|k| (k, world.name.clone())).collect();
        while let Some((k, prefix)) = stack.pop() {
            let p = &tree.placements[k as usize];
            let path = format!("{prefix}/{}[{}]", p.name, p.copy);
            for d in tree.daughters(p.logical).rev() {
                stack.push((d, path.clone()));
            }
            out.push(VolumeInfo {
                path,
                placement: Some(k),
                logical: p.logical,
                copy: p.copy,
                material: tree.logical[p.logical as usize].material as usize,
            });
        }
        out
    }

    /// The key of every slot in `summary.json`'s `volumes` (slot order): the physical volume's
    /// name where no other instance has that name; else `name[copy]` where that is unique; else
    /// the shortest tail of the placement path that is, `Layer[3]/Lead[0]`, up to the whole path
    /// (the world, placed by nothing, is its logical volume's name). A tail that is still not
    /// unique (two placements of one name and copy number in one mother) is the full path with
    /// `#slot` appended. Keys are unique.
    #[must_use]
    pub fn volume_keys(&self) -> Vec<String> {
        let tree = &self.gdml.tree;
        // Per slot the chain of placements from the world down, in volume_list's order.
        let mut chains: Vec<Vec<u32>> = Vec::with_capacity(self.volumes);
        chains.push(Vec::new());
        let mut stack: Vec<(u32, Vec<u32>)> = tree.daughters(tree.world).rev().map(|k| (k, Vec::new())).collect();
        while let Some((k, mut chain)) = stack.pop() {
            chain.push(k);
            for d in tree.daughters(tree.placements[k as usize].logical).rev() {
                stack.push((d, chain.clone()));
            }
            chains.push(chain);
        }
        let part = |k: u32| {
            let p = &tree.placements[k as usize];
            format!("{}[{}]", p.name, p.copy)
        };
        // Form 0: the name; form f ≥ 1: the last f placements with their copy numbers.
        let candidate = |chain: &[u32], f: usize| -> Option<String> {
            match (chain.last(), f) {
                (None, 0) => Some(tree.logical[tree.world as usize].name.clone()),
                (None, _) => None,
                (Some(&k), 0) => Some(tree.placements[k as usize].name.clone()),
                (Some(_), f) if f <= chain.len() => Some(chain[chain.len() - f..].iter().map(|&k| part(k)).collect::<Vec<_>>().join("/")),
                _ => None,
            }
        };
        let depth = chains.iter().map(Vec::len).max().unwrap_or(0);
        let mut keys: Vec<Option<String>> = vec![None; chains.len()];
        let mut taken = std::collections::HashSet::new();
        for f in 0..=depth {
            let mut count = std::collections::HashMap::<String, u32>::new();
            let cands: Vec<(usize, String)> = (0..chains.len())
                .filter(|&s| keys[s].is_none())
                .filter_map(|s| candidate(&chains[s], f).map(|c| (s, c)))
                .collect();
            for (_, c) in &cands {
                *count.entry(c.clone()).or_default() += 1;
            }
            for (s, c) in cands {
                if count[&c] == 1 && !taken.contains(&c) {
                    taken.insert(c.clone());
                    keys[s] = Some(c);
                }
            }
        }
        let paths = self.volume_list();
        keys.into_iter()
            .enumerate()
            .map(|(s, k)| k.unwrap_or_else(|| format!("{}#{s}", paths[s].path)))
            .collect()
    }

    /// The slot of a located path.
    #[must_use]
    pub fn slot(&self, path: &VolumePath) -> usize {
        path.placements.iter().map(|&k| self.offsets[k as usize]).sum::<u64>() as usize
    }

    /// Where a primary starts: its position [cm] and volume path; `None` outside the world.
    #[must_use]
    pub fn locate(&self, pos: [f64; 3]) -> Option<VolumePath> {
        self.nav().locate(to_mm(pos))
    }
}

fn to_mm(p: [f64; 3]) -> Vec3 {
    Vec3::new(p[0] * 10.0, p[1] * 10.0, p[2] * 10.0)
}

fn dir3(d: [f64; 3]) -> Vec3 {
    Vec3::new(d[0], d[1], d[2])
}

impl ShowerGeometry for DetectorPhysics {
    type Loc = VolumePath;
    /// Distance [mm] and what lies behind.
    type Step = (f64, Boundary);

    fn material(&self, loc: &VolumePath) -> Option<usize> {
        let logical = self.nav().logical(loc);
        self.material_of[self.gdml.tree.logical[logical as usize].material as usize]
    }

    fn volume(&self, loc: &VolumePath) -> usize {
        self.slot(loc)
    }

    fn next_boundary(&self, pos: [f64; 3], dir: [f64; 3], loc: &VolumePath) -> (f64, (f64, Boundary)) {
        let (d, b) = self.nav().find_next_step(loc, to_mm(pos), dir3(dir), f64::INFINITY);
        (d / 10.0, (d, b))
    }

    fn cross(&self, pos: &mut [f64; 3], dir: [f64; 3], loc: &mut VolumePath, step: &(f64, Boundary)) -> bool {
        let p = to_mm(*pos).along(dir3(dir), step.0 + crate::geo::navigator::PUSH);
        *pos = [p.x / 10.0, p.y / 10.0, p.z / 10.0];
        // The point is relocated from the current path: up while the volume does not hold it,
        // then down (the navigator's crossing), so a boundary entering a daughter and one
        // leaving into the mother are handled alike.
        self.nav().relocate(loc, p)
    }

    fn safety(&self, pos: [f64; 3], loc: &VolumePath) -> f64 {
        self.nav().safety(loc, to_mm(pos)) / 10.0
    }

    fn field_on(&self) -> bool {
        self.field.is_some()
    }

    fn field_strength(&self) -> f64 {
        self.field.as_ref().map_or(0.0, Field::b_max)
    }

    /// Along the helix through the volume tree ([`propagate`]): boundaries found along the
    /// curved path to `accuracy.delta_intersection`, chords of sagitta ≤ `accuracy.delta_chord`.
    fn curved_step(
        &self,
        pos: &mut [f64; 3],
        dir: &mut [f64; 3],
        loc: &mut VolumePath,
        charge: f64,
        momentum: f64,
        s_max: f64,
        safety: f64,
    ) -> (f64, StepEnd) {
        let Some(field) = &self.field else {
            unreachable!("curved steps are taken only in a field")
        };
        let mut track = ChargedTrack {
            pos: to_mm(*pos),
            dir: dir3(*dir),
            charge,
            momentum,
        };
        let (s, end) = match field {
            Field::Uniform(u) => propagate(&self.nav(), loc, &mut track, u, s_max * 10.0, safety * 10.0, &self.accuracy),
            Field::Map(m) => propagate_in_map(&self.nav(), loc, &mut track, m, s_max * 10.0, &self.accuracy),
        };
        *pos = [track.pos.x / 10.0, track.pos.y / 10.0, track.pos.z / 10.0];
        *dir = [track.dir.x, track.dir.y, track.dir.z];
        (s / 10.0, end)
    }

    fn sensitive(&self, loc: &VolumePath) -> bool {
        self.sensitive[self.nav().logical(loc) as usize]
    }
}

/// Simulate event `event` in the detector (`None` when `stop` asked to stop). A primary outside
/// the world escapes at once (requests refuse such a source before they run).
///
/// # Panics
/// If the primary energy exceeds [`super::transport::MAX_PRIMARY_ENERGY`].
#[must_use]
pub fn run_event_or_stop(phys: &DetectorPhysics, primary: &Primary, seed: u64, event: u64, stop: &dyn Fn() -> bool) -> Option<EventTally> {
    run_event_with_hits(phys, primary, seed, event, stop).map(|(t, _)| t)
}

/// [`run_event_or_stop`] with the event's hits in sensitive volumes.
///
/// # Panics
/// If the primary energy exceeds [`super::transport::MAX_PRIMARY_ENERGY`].
#[must_use]
pub fn run_event_with_hits(
    phys: &DetectorPhysics,
    primary: &Primary,
    seed: u64,
    event: u64,
    stop: &dyn Fn() -> bool,
) -> Option<(EventTally, Vec<Hit>)> {
    assert!(
        primary.energy <= super::transport::MAX_PRIMARY_ENERGY,
        "primary energy {} MeV above the tallies' limit",
        primary.energy
    );
    let tally = EventTally::new(phys.volumes(), phys.materials.len(), primary.energy);
    let start = phys.locate(primary.pos).map(|path| (primary.pos, path));
    track_event(phys, &phys.materials, primary, seed, primary_id(event), start, tally, stop)
}

/// [`run_event_or_stop`] without a stop request.
#[must_use]
pub fn run_event(phys: &DetectorPhysics, primary: &Primary, seed: u64, event: u64) -> EventTally {
    run_event_or_stop(phys, primary, seed, event, &|| false).expect("never asked to stop")
}

/// Energy deposited per GDML material in one event [MeV] (exact fixed-point sums);
/// `slot_material` is each slot's material ([`VolumeInfo::material`]).
#[must_use]
pub fn edep_per_material(slot_material: &[usize], materials: usize, e: &EventTally) -> Vec<f64> {
    let mut q = vec![0u128; materials];
    for (slot, &v) in e.edep.iter().enumerate() {
        q[slot_material[slot]] += u128::from(v);
    }
    q.into_iter().map(|v| v as f64 / FIXED_SCALE).collect()
}

/// The sums of a run over its events.
#[derive(Clone, Debug, PartialEq)]
pub struct DetectorRun {
    pub primary: Primary,
    pub seed: u64,
    pub first: u64,
    pub events: u64,
    /// Per volume slot: Σ deposit [2⁻⁴⁰ MeV, exact] and Σ deposit² [MeV²].
    pub edep: Vec<u128>,
    pub edep2: Vec<f64>,
    /// Per GDML material: the same.
    pub material_edep: Vec<u128>,
    pub material_edep2: Vec<f64>,
    /// Σ escaped kinetic energy and Σ net rest mass [2⁻⁴⁰ MeV].
    pub escaped: u128,
    pub rest_mass: i128,
    /// Σ created γ, e⁻, e⁺; Σ charged and neutral steps; tracks stopped by the step guard.
    pub created: [u64; 3],
    pub steps: [u64; 2],
    pub killed: u64,
    /// Largest |E₀ − deposits − escaped − rest mass| / E₀ over the events.
    pub worst_balance: f64,
    /// The hits in sensitive volumes with their event number, in event order.
    pub hits: Vec<(u64, Hit)>,
    /// The run stopped early because its hits exceeded [`MAX_HITS`].
    pub too_many_hits: bool,
}

/// Most hits a run holds in memory (64 bytes each with its event number: 1.3 GB); a run that
/// makes more stops and is refused (fewer events or fewer sensitive volumes).
pub const MAX_HITS: usize = 20_000_000;

impl DetectorRun {
    fn new(phys: &DetectorPhysics, primary: &Primary, first: u64, seed: u64) -> Self {
        DetectorRun {
            primary: *primary,
            seed,
            first,
            events: 0,
            edep: vec![0; phys.volumes()],
            edep2: vec![0.0; phys.volumes()],
            material_edep: vec![0; phys.gdml.materials.len()],
            material_edep2: vec![0.0; phys.gdml.materials.len()],
            escaped: 0,
            rest_mass: 0,
            created: [0; 3],
            steps: [0; 2],
            killed: 0,
            worst_balance: 0.0,
            hits: Vec::new(),
            too_many_hits: false,
        }
    }

    fn add(&mut self, slot_material: &[usize], e: &EventTally, hits: &[Hit]) {
        let event = self.first + self.events;
        self.hits.extend(hits.iter().map(|&h| (event, h)));
        self.events += 1;
        for (slot, &q) in e.edep.iter().enumerate() {
            self.edep[slot] += u128::from(q);
            let x = q as f64 / FIXED_SCALE;
            self.edep2[slot] += x * x;
        }
        let mut q = vec![0u128; self.material_edep.len()];
        for (slot, &v) in e.edep.iter().enumerate() {
            q[slot_material[slot]] += u128::from(v);
        }
        for (m, &v) in q.iter().enumerate() {
            let x = v as f64 / FIXED_SCALE;
            self.material_edep[m] += v;
            self.material_edep2[m] += x * x;
        }
        self.escaped += u128::from(e.escaped);
        self.rest_mass += i128::from(e.rest_mass);
        for k in 0..3 {
            self.created[k] += e.created[k];
        }
        self.steps[0] += e.charged_steps;
        self.steps[1] += e.neutral_steps;
        self.killed += e.killed;
        self.worst_balance = self.worst_balance.max((e.balance() / e.primary_energy).abs());
    }

    /// Σ deposit in a volume slot over the events [MeV].
    #[must_use]
    pub fn edep_mev(&self, slot: usize) -> f64 {
        self.edep[slot] as f64 / FIXED_SCALE
    }

    /// Mean per event and its statistical error [MeV] of a volume slot.
    #[must_use]
    pub fn volume_mean(&self, slot: usize) -> (f64, f64) {
        mean_rms_from_sums(self.edep_mev(slot), self.edep2[slot], self.events)
    }

    /// Mean per event, its statistical error and the RMS of the per-event deposit [MeV] of a
    /// volume slot.
    #[must_use]
    pub fn volume_stats(&self, slot: usize) -> (f64, f64, f64) {
        with_rms(self.volume_mean(slot), self.events)
    }

    /// [`Self::volume_stats`] of a GDML material.
    #[must_use]
    pub fn material_stats(&self, m: usize) -> (f64, f64, f64) {
        with_rms(self.material_mean(m), self.events)
    }

    /// Mean per event and its statistical error [MeV] of a GDML material.
    #[must_use]
    pub fn material_mean(&self, m: usize) -> (f64, f64) {
        mean_rms_from_sums(self.material_edep[m] as f64 / FIXED_SCALE, self.material_edep2[m], self.events)
    }

    /// Mean escaped kinetic energy per event [MeV].
    #[must_use]
    pub fn escaped_mean(&self) -> f64 {
        self.escaped as f64 / FIXED_SCALE / self.events.max(1) as f64
    }
}

/// (mean, error of the mean) → (mean, error, RMS = error·√N): the RMS of the per-event values
/// (the population's, as `em testem3` reports it).
fn with_rms((mean, err): (f64, f64), n: u64) -> (f64, f64, f64) {
    (mean, err, err * (n as f64).sqrt())
}

/// Bytes of one event's tally in the detector (a batch of [`BATCH`] is held at once).
#[must_use]
pub fn event_tally_bytes(volumes: usize, materials: usize) -> u64 {
    (std::mem::size_of::<EventTally>() + 8 * (volumes + materials)) as u64
}

/// The sums of events `first ..` from their tallies, in event order (a GPU run's events), with
/// their hits (`(event, hit)` sorted by event, each event's in the canonical order of
/// [`Hit`]), as [`run_range`] sums them: in batches of [`BATCH`] events from `first`, stopping
/// after the batch in which the hits passed [`MAX_HITS`] (`too_many_hits`), so that a GPU run
/// that ran at least up to there ends where the CPU's does.
#[must_use]
pub fn run_from_events(
    phys: &DetectorPhysics,
    primary: &Primary,
    first: u64,
    seed: u64,
    events: &[EventTally],
    hits: &[(u64, Hit)],
) -> DetectorRun {
    let mut run = DetectorRun::new(phys, primary, first, seed);
    let slot_material: Vec<usize> = phys.volume_list().iter().map(|v| v.material).collect();
    let mut h = 0usize;
    let mut event_hits = Vec::new();
    for (k, e) in events.iter().enumerate() {
        let event = first + k as u64;
        event_hits.clear();
        while h < hits.len() && hits[h].0 <= event {
            if hits[h].0 == event {
                event_hits.push(hits[h].1);
            }
            h += 1;
        }
        run.add(&slot_material, e, &event_hits);
        if (k as u64 + 1).is_multiple_of(BATCH) && run.hits.len() > MAX_HITS {
            run.too_many_hits = true;
            return run;
        }
    }
    run.too_many_hits = run.hits.len() > MAX_HITS;
    run
}

/// Events `first .. first + n`, in parallel batches reduced in event order. Polls
/// `progress.should_stop()` as [`super::run::run_range`] does; a stopped run holds fewer events.
#[must_use]
pub fn run_range(phys: &DetectorPhysics, primary: &Primary, first: u64, n: u64, seed: u64, progress: &Progress) -> DetectorRun {
    let stop = || progress.should_stop();
    let mut run = DetectorRun::new(phys, primary, first, seed);
    let slot_material: Vec<usize> = phys.volume_list().iter().map(|v| v.material).collect();
    let mut next = first;
    let end = first + n;
    while next < end && !stop() {
        let upto = (next + BATCH).min(end);
        let batch: Vec<Option<(EventTally, Vec<Hit>)>> = (next..upto)
            .into_par_iter()
            .map(|i| {
                if stop() {
                    return None;
                }
                let t = run_event_with_hits(phys, primary, seed, i, &stop)?;
                progress.add(1);
                Some(t)
            })
            .collect();
        for (t, hits) in batch.iter().flatten() {
            run.add(&slot_material, t, hits);
        }
        if batch.iter().any(Option::is_none) {
            break;
        }
        if run.hits.len() > MAX_HITS {
            run.too_many_hits = true;
            break;
        }
        next = upto;
    }
    run
}
