//! GDML reader (stub while written).
