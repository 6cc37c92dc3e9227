// The GDML build of the shower kernel for the host (tests/shower_gdml_host_twin.rs):
// kernels/shower.cu with WD_GEOMETRY_GDML after the navigator's twins (kernels/geo/*.cuh),
// driven by the same host loop as shower_host_twin.cpp.
#define WD_GEOMETRY_GDML 1
#include "shower_host_twin.cpp"
