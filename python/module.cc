// tandem._C, the extension module behind the tandem package (tandem/*.py
// holds the public API; this module holds what it calls).
#include "pybind11/pybind11.h"
#include "python/bindings.h"
#include "python/status.h"
#include "python/tensor_bridge.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "Tandem's C++ core (use the tandem package, not this module)";
  tandem::python::RegisterStatusErrors(m);
  tandem::python::RegisterPlaces(m);
  tandem::python::RegisterTensor(m);
  tandem::python::RegisterPrograms(m);
  tandem::python::RegisterLayers(m);
  tandem::python::RegisterExecutor(m);
  tandem::python::RegisterProfiler(m);
  tandem::python::RegisterData(m);
}
