//! Everything a shower run reads, built once on the host: the calorimeter, its production cuts
//! and, per material, the energy thresholds and ionisation tables.

use super::cuts::{EnergyCuts, RangeCuts};
use super::geometry::Calorimeter;
use super::tables::{MaterialTables, TableOptions};

#[derive(Clone, Debug, PartialEq)]
pub struct ShowerParams {
    pub calorimeter: Calorimeter,
    pub range_cuts: RangeCuts,
    pub table_options: TableOptions,
    /// One per material of the calorimeter, same order as `calorimeter.materials`.
    pub materials: Vec<MaterialTables>,
}

impl ShowerParams {
    /// Convert the cuts and build the tables of every material of `calorimeter`.
    #[must_use]
    pub fn build(calorimeter: Calorimeter, range_cuts: RangeCuts, table_options: TableOptions) -> Self {
        let materials = calorimeter
            .materials
            .iter()
            .map(|m| MaterialTables::build(m, EnergyCuts::new(m, &range_cuts), &table_options))
            .collect();
        ShowerParams {
            calorimeter,
            range_cuts,
            table_options,
            materials,
        }
    }

    /// TestEm3 as Geant4 10.3 runs it: its calorimeter, 1 mm cuts, default tables.
    #[must_use]
    pub fn testem3() -> Self {
        Self::build(Calorimeter::testem3(), RangeCuts::default(), TableOptions::default())
    }

    /// Thresholds and tables of the material of `slab`.
    #[must_use]
    pub fn tables(&self, slab: usize) -> &MaterialTables {
        &self.materials[self.calorimeter.material_index(slab)]
    }
}
