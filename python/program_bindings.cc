// tandem._C.Program (ProgramHandle), its variables and ops as plain Python
// values, and the attribute conversions the layers use.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/amp/amp.h"
#include "framework/backward/recompute.h"
#include "pybind11/stl.h"
#include "python/attr_convert.h"
#include "python/bindings.h"
#include "python/program_handle.h"

namespace py = pybind11;

namespace tandem {
namespace python {
namespace {

py::dict VarInfo(const VarDesc& v) {
  py::dict d;
  d["name"] = v.name;
  d["dtype"] = std::string(DataTypeName(v.dtype));
  d["shape"] = std::vector<int64_t>(v.shape.dims().begin(), v.shape.dims().end());
  d["persistable"] = v.persistable;
  d["is_parameter"] = v.is_parameter;
  d["stop_gradient"] = v.stop_gradient;
  d["selected_rows"] = v.kind == VarKind::kSelectedRows;
  return d;
}

py::dict OpInfo(const OpDesc& op) {
  py::dict d;
  d["type"] = op.type;
  d["inputs"] = op.inputs;
  d["outputs"] = op.outputs;
  py::dict attrs;
  for (const auto& [name, value] : op.attrs) attrs[py::str(name)] = AttrToPython(value);
  d["attrs"] = attrs;
  d["op_device"] = op.op_device;
  d["role"] = std::string(OpRoleName(op.role));
  d["transfer_policy"] = std::string(TransferPolicyName(op.transfer_policy));
  return d;
}

// The forward part of `program` for evaluation (Paddle's clone(for_test=True)):
// backward, loss-gradient and optimizer ops dropped, is_test set where an op has it.
Program ForTest(const Program& program) {
  Program out;
  for (const VarDesc& v : program.block().vars()) out.block().SetVar(v);
  for (const OpDesc& op : program.block().ops()) {
    if (op.role != OpRole::kForward) continue;
    OpDesc copy = op;
    auto it = copy.attrs.find("is_test");
    if (it != copy.attrs.end()) it->second = true;
    out.block().AppendOp(std::move(copy));
  }
  return out;
}

}  // namespace

void RegisterPrograms(py::module_& m) {
  py::enum_<DataType>(m, "DataType", "An element type; op attributes of dtype kind take one.")
      .value("float32", DataType::kFloat32)
      .value("float64", DataType::kFloat64)
      .value("int32", DataType::kInt32)
      .value("int64", DataType::kInt64)
      .value("bool", DataType::kBool)
      .value("bfloat16", DataType::kBFloat16)
      .value("float16", DataType::kFloat16);
  py::class_<ProgramHandle>(m, "Program", "The C++ program behind tandem.Program.")
      .def(py::init<>())
      .def("debug_string", [](const ProgramHandle& p) { return p.program.DebugString(); })
      .def("to_json", [](const ProgramHandle& p) { return p.program.ToJson(); })
      .def_static("from_json",
                  [](const std::string& text) {
                    ProgramHandle p;
                    p.program = ValueOrThrow(Program::FromJson(text));
                    return p;
                  })
      .def("clone",
           [](const ProgramHandle& p, bool for_test) {
             ProgramHandle copy;
             copy.program = for_test ? ForTest(p.program) : p.program;
             return copy;
           })
      .def_readonly("version", &ProgramHandle::version)
      .def_readonly("serial", &ProgramHandle::serial)
      .def("num_ops", [](const ProgramHandle& p) { return p.program.block().ops().size(); })
      .def("ops",
           [](const ProgramHandle& p) {
             py::list ops;
             for (const OpDesc& op : p.program.block().ops()) ops.append(OpInfo(op));
             return ops;
           })
      .def("vars",
           [](const ProgramHandle& p) {
             py::list vars;
             for (const VarDesc& v : p.program.block().vars()) vars.append(VarInfo(v));
             return vars;
           })
      .def("find_var",
           [](const ProgramHandle& p, const std::string& name) -> py::object {
             const VarDesc* v = p.program.block().FindVar(name);
             if (v == nullptr) return py::none();
             return VarInfo(*v);
           })
      .def("set_stop_gradient",
           [](ProgramHandle& p, const std::string& name, bool stop) {
             VarDesc* v = p.program.block().FindVar(name);
             if (v == nullptr) {
               throw StatusError(absl::NotFoundError(
                   absl::StrCat("variable '", name, "' is not in the program")));
             }
             v->stop_gradient = stop;
             ++p.version;
           })
      .def(
          "apply_amp",
          [](ProgramHandle& p, const std::string& dtype) {
            AmpOptions options;
            options.dtype = ValueOrThrow(ParseDataType(dtype));
            AmpReport report = ValueOrThrow(ApplyAmp(options, &p.program));
            ++p.version;
            return report.low_precision_ops;
          },
          "framework/amp/amp.h's ApplyAmp; the rewritten ops ('fc #3').", py::arg("dtype"))
      .def(
          "apply_recompute",
          [](ProgramHandle& p, std::optional<std::vector<std::string>> ops, bool parameter_casts) {
            RecomputeOptions options;
            if (ops.has_value()) options.ops = std::set<std::string>(ops->begin(), ops->end());
            options.parameter_casts = parameter_casts;
            RecomputeReport report = ValueOrThrow(ApplyRecompute(options, &p.program));
            ++p.version;
            return report.values;
          },
          "framework/backward/recompute.h's ApplyRecompute; the values no longer kept "
          "('h (gelu #12)').",
          py::arg("ops") = py::none(), py::arg("parameter_casts") = false)
      .def("__eq__",
           [](const ProgramHandle& a, const ProgramHandle& b) { return a.program == b.program; });
}

}  // namespace python
}  // namespace tandem
