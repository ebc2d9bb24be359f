// tandem._C.data: IDX files and the shuffling, prefetching DataLoader.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "data/data_loader.h"
#include "data/idx.h"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "python/status.h"
#include "python/tensor_bridge.h"

namespace py = pybind11;

namespace tandem {
namespace python {
namespace {

const char* NumpyDtypeOf(IdxType type) {
  switch (type) {
    case IdxType::kUint8:
      return "uint8";
    case IdxType::kInt8:
      return "int8";
    case IdxType::kInt16:
      return "int16";
    case IdxType::kInt32:
      return "int32";
    case IdxType::kFloat32:
      return "float32";
    case IdxType::kFloat64:
      return "float64";
  }
  return "uint8";
}

// Columns for a DataLoader, consumed by it.
struct Columns {
  std::vector<Column> columns;
};

// The first `limit` examples of each column (all when limit <= 0).
void Truncate(std::vector<Column>* columns, int64_t limit) {
  for (Column& c : *columns) {
    if (limit <= 0 || limit >= c.data.num_items()) continue;
    c.data.dims[0] = limit;
    c.data.data.resize(limit * c.data.item_elements() * IdxTypeSize(c.data.type));
  }
}

py::dict BatchDict(Batch batch) {
  py::dict d;
  for (auto& [name, t] : batch.tensors) d[py::str(name)] = PyTensor{std::move(t)};
  return d;
}

}  // namespace

void RegisterData(py::module_& m) {
  py::module_ d = m.def_submodule("data", "IDX files and the DataLoader (see tandem.data)");
  d.def(
      "read_idx",
      [](const std::string& path) {
        absl::StatusOr<IdxArray> a;
        {
          py::gil_scoped_release release;
          a = ReadIdxFile(path);
        }
        IdxArray array = ValueOrThrow(std::move(a));
        py::module_ numpy = py::module_::import("numpy");
        py::bytes raw(reinterpret_cast<const char*>(array.data.data()), array.data.size());
        return numpy.attr("frombuffer")(raw, NumpyDtypeOf(array.type)).attr("reshape")(array.dims);
      },
      "An IDX file (plain or gzip) as a numpy array.", py::arg("path"));
  py::class_<Columns>(d, "Columns", "Examples for a DataLoader, by column.")
      .def_property_readonly("names",
                             [](const Columns& c) {
                               std::vector<std::string> names;
                               for (const Column& col : c.columns) names.push_back(col.name);
                               return names;
                             })
      .def_property_readonly("num_examples", [](const Columns& c) {
        return c.columns.empty() ? int64_t{0} : c.columns[0].data.num_items();
      });
  d.def(
      "fashion_mnist_columns",
      [](const std::string& dir, bool train, int64_t limit) {
        absl::StatusOr<std::vector<Column>> columns;
        {
          py::gil_scoped_release release;
          columns = FashionMnistColumns(dir, train);
        }
        if (absl::IsNotFound(columns.status())) {
          throw StatusError(absl::NotFoundError(absl::StrCat(
              columns.status().message(),
              " (install Debian's dataset-fashion-mnist, e.g. tools/setup.sh, or pass data_dir)")));
        }
        Columns out{ValueOrThrow(std::move(columns))};
        Truncate(&out.columns, limit);
        return out;
      },
      py::arg("dir"), py::arg("train"), py::arg("limit"));
  py::class_<DataLoader>(d, "DataLoader", "Shuffled mini-batches, prepared ahead by a thread.")
      .def(py::init([](Columns& columns, int64_t batch_size, bool shuffle, uint64_t seed,
                       bool drop_last, bool prefetch) {
             DataLoaderOptions options;
             options.batch_size = batch_size;
             options.shuffle = shuffle;
             options.seed = seed;
             options.drop_last = drop_last;
             options.prefetch = prefetch;
             return ValueOrThrow(DataLoader::Create(std::move(columns.columns), options));
           }),
           py::arg("columns"), py::arg("batch_size"), py::arg("shuffle"), py::arg("seed"),
           py::arg("drop_last"), py::arg("prefetch"))
      .def_property_readonly("num_examples", &DataLoader::num_examples)
      .def_property_readonly("batches_per_epoch", &DataLoader::batches_per_epoch)
      .def(
          "next",
          [](DataLoader& loader) -> py::object {
            absl::StatusOr<Batch> batch;
            {
              py::gil_scoped_release release;
              batch = loader.Next();
            }
            if (absl::IsOutOfRange(batch.status())) return py::none();  // end of the epoch
            return BatchDict(ValueOrThrow(std::move(batch)));
          },
          "The next batch of the epoch as {column: Tensor}, or None at its end (the next call "
          "starts the next epoch).");
}

}  // namespace python
}  // namespace tandem
