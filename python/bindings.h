// The parts of the extension module tandem._C, one Register function per
// source file; module.cc calls them in order.
#ifndef TANDEM_PYTHON_BINDINGS_H_
#define TANDEM_PYTHON_BINDINGS_H_

#include "pybind11/pybind11.h"

namespace tandem {
namespace python {

void RegisterPlaces(pybind11::module_& m);    // executor_bindings.cc
void RegisterPrograms(pybind11::module_& m);  // program_bindings.cc
void RegisterLayers(pybind11::module_& m);    // layer_bindings.cc
void RegisterExecutor(pybind11::module_& m);  // executor_bindings.cc
void RegisterProfiler(pybind11::module_& m);  // profiler_bindings.cc
void RegisterData(pybind11::module_& m);      // data_bindings.cc
// RegisterTensor is in tensor_bridge.h (tensor_bindings.cc).

}  // namespace python
}  // namespace tandem

#endif  // TANDEM_PYTHON_BINDINGS_H_
