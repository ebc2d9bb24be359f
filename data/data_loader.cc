#include "data/data_loader.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "framework/device/device.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"

namespace tandem {
namespace {

// SplitMix64: the shuffle's generator.
uint64_t NextRandom(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Allocator* BatchAllocator() {
  if (DeviceRegistry::Global().DeviceCount(DeviceType::GPU()) > 0) {
    absl::StatusOr<Device*> gpu = DeviceRegistry::Global().GetDevice(GPUPlace(0));
    if (gpu.ok()) return (*gpu)->host_allocator();
  }
  return CpuAllocator::Default();
}

template <typename T>
void Convert(const Column& c, const std::vector<int64_t>& examples, T* out) {
  const int64_t per_item = c.data.item_elements();
  for (size_t k = 0; k < examples.size(); ++k) {
    const int64_t first = examples[k] * per_item;
    for (int64_t e = 0; e < per_item; ++e) {
      out[k * per_item + e] = static_cast<T>(c.data.Value(first + e) * c.scale + c.shift);
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataLoader>> DataLoader::Create(std::vector<Column> columns,
                                                               DataLoaderOptions options) {
  if (options.batch_size < 1 || options.prefetch_batches < 1) {
    return absl::InvalidArgumentError(absl::StrCat("DataLoader: batch_size (", options.batch_size,
                                                   ") and prefetch_batches (",
                                                   options.prefetch_batches, ") must be >= 1"));
  }
  if (columns.empty()) return absl::InvalidArgumentError("DataLoader: no columns");
  std::set<std::string> names;
  std::vector<std::string> counts;
  for (const Column& c : columns) {
    if (!names.insert(c.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("DataLoader: column '", c.name, "' appears twice"));
    }
    if (c.dtype != DataType::kFloat32 && c.dtype != DataType::kFloat64 &&
        c.dtype != DataType::kInt32 && c.dtype != DataType::kInt64) {
      return absl::InvalidArgumentError(absl::StrCat("DataLoader: column '", c.name, "' has dtype ",
                                                     DataTypeName(c.dtype),
                                                     "; want float32, float64, int32 or int64"));
    }
    counts.push_back(absl::StrCat(c.name, ": ", c.data.num_items()));
  }
  const int64_t n = columns[0].data.num_items();
  for (const Column& c : columns) {
    if (c.data.num_items() != n || n == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("DataLoader: every column needs the same, non-zero number of examples, got ",
                       absl::StrJoin(counts, ", ")));
    }
  }
  std::unique_ptr<DataLoader> loader(new DataLoader(std::move(columns), options, n));
  if (options.prefetch) loader->thread_ = std::thread([l = loader.get()] { l->PrefetchLoop(); });
  return loader;
}

DataLoader::DataLoader(std::vector<Column> columns, DataLoaderOptions options, int64_t num_examples)
    : columns_(std::move(columns)),
      options_(options),
      num_examples_(num_examples),
      allocator_(BatchAllocator()) {
  Shuffle(0);
}

DataLoader::~DataLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t DataLoader::batches_per_epoch() const {
  const int64_t b = options_.batch_size;
  return options_.drop_last ? num_examples_ / b : (num_examples_ + b - 1) / b;
}

int64_t DataLoader::MaxBytesHeld() const {
  if (!options_.prefetch) return 0;
  int64_t example_bytes = 0;
  for (const Column& c : columns_) {
    int64_t item = 1;
    for (size_t d = 1; d < c.data.dims.size(); ++d) item *= c.data.dims[d];
    example_bytes += item * static_cast<int64_t>(SizeOf(c.dtype));
  }
  // The items repeat per epoch: its batches, then an end-of-epoch mark (no
  // bytes). The most any `window` consecutive items hold:
  const int64_t batches = batches_per_epoch();
  const int64_t period = batches + 1;
  auto item_bytes = [&](int64_t k) -> int64_t {
    k %= period;
    if (k == batches) return 0;
    return std::min(options_.batch_size, num_examples_ - k * options_.batch_size) * example_bytes;
  };
  const int64_t window = options_.prefetch_batches + 1;
  int64_t most = 0;
  for (int64_t start = 0; start < period; ++start) {
    int64_t sum = 0;
    for (int64_t k = start; k < start + window; ++k) sum += item_bytes(k);
    most = std::max(most, sum);
  }
  return most;
}

void DataLoader::Shuffle(int64_t epoch) {
  order_.resize(num_examples_);
  for (int64_t i = 0; i < num_examples_; ++i) order_[i] = i;
  if (!options_.shuffle) return;
  uint64_t state = options_.seed ^ (static_cast<uint64_t>(epoch) * 0xD1B54A32D192ED03ull);
  for (int64_t i = num_examples_ - 1; i > 0; --i) {  // Fisher-Yates
    const uint64_t r = NextRandom(&state);
    const int64_t j = static_cast<int64_t>(
        (static_cast<unsigned __int128>(r) * static_cast<uint64_t>(i + 1)) >> 64);
    std::swap(order_[i], order_[j]);
  }
}

absl::StatusOr<Batch> DataLoader::MakeBatch(int64_t epoch, int64_t index) const {
  const int64_t begin = index * options_.batch_size;
  const int64_t end = std::min(num_examples_, begin + options_.batch_size);
  const std::vector<int64_t> examples(order_.begin() + begin, order_.begin() + end);
  Batch batch;
  batch.epoch = epoch;
  batch.index = index;
  batch.size = end - begin;
  for (const Column& c : columns_) {
    std::vector<int64_t> dims = c.data.dims;
    dims[0] = batch.size;
    ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(allocator_, c.dtype, Shape(dims)));
    switch (c.dtype) {
      case DataType::kFloat32:
        Convert(c, examples, t.data<float>());
        break;
      case DataType::kFloat64:
        Convert(c, examples, t.data<double>());
        break;
      case DataType::kInt32:
        Convert(c, examples, t.data<int32_t>());
        break;
      default:
        Convert(c, examples, t.data<int64_t>());
        break;
    }
    batch.tensors.emplace(c.name, std::move(t));
  }
  return batch;
}

DataLoader::Item DataLoader::Produce() {
  if (batch_ == batches_per_epoch()) {
    Item end{absl::OutOfRangeError(absl::StrCat("end of epoch ", epoch_)), true};
    ++epoch_;
    batch_ = 0;
    Shuffle(epoch_);
    return end;
  }
  return Item{MakeBatch(epoch_, batch_++)};
}

void DataLoader::PrefetchLoop() {
  while (true) {
    Item item = Produce();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock,
             [&] { return stop_ || static_cast<int>(queue_.size()) < options_.prefetch_batches; });
    if (stop_) return;
    queue_.push_back(std::move(item));
    cv_.notify_all();
  }
}

absl::StatusOr<Batch> DataLoader::Next() {
  if (!options_.prefetch) return Produce().batch;
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !queue_.empty(); });
  Item item = std::move(queue_.front());
  queue_.pop_front();
  cv_.notify_all();
  return std::move(item.batch);
}

absl::StatusOr<std::vector<Column>> FashionMnistColumns(const std::string& dir, bool train) {
  const std::string split = train ? "train" : "t10k";
  const std::string images_path = absl::StrCat(dir, "/", split, "-images-idx3-ubyte.gz");
  const std::string labels_path = absl::StrCat(dir, "/", split, "-labels-idx1-ubyte.gz");
  ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile(images_path));
  ASSIGN_OR_RETURN(IdxArray labels, ReadIdxFile(labels_path));
  if (images.type != IdxType::kUint8 || images.dims.size() != 3 || labels.type != IdxType::kUint8 ||
      labels.dims.size() != 1 || images.num_items() != labels.num_items()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", images_path, "' (type 0x", absl::Hex(static_cast<int>(images.type)), ", dims [",
        absl::StrJoin(images.dims, ", "), "]) and '", labels_path, "' (type 0x",
        absl::Hex(static_cast<int>(labels.type)), ", dims [", absl::StrJoin(labels.dims, ", "),
        "]) are not uint8 images [n, rows, cols] and uint8 labels [n]"));
  }
  std::vector<Column> columns(2);
  columns[0] = {"image", std::move(images), DataType::kFloat32, 1.0 / 255, 0};
  columns[1] = {"label", std::move(labels), DataType::kInt64, 1, 0};
  return columns;
}

}  // namespace tandem
