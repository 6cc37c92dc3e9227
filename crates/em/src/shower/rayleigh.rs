//! Rayleigh scattering (to come).
