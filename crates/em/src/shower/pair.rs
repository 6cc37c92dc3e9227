//! Bethe–Heitler pair production (to come).
