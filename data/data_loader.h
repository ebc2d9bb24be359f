// DataLoader: shuffled mini-batches of in-memory examples, prepared by a
// background thread while the caller trains on the previous batch.
//
//   ASSIGN_OR_RETURN(std::vector<Column> train, FashionMnistColumns(dir, /*train=*/true));
//   DataLoaderOptions options;
//   options.batch_size = 128;
//   options.seed = 7;
//   ASSIGN_OR_RETURN(std::unique_ptr<DataLoader> loader,
//                    DataLoader::Create(std::move(train), options));
//   while (true) {
//     absl::StatusOr<Batch> batch = loader->Next();
//     if (absl::IsOutOfRange(batch.status())) break;     // end of the epoch
//     RETURN_IF_ERROR(batch.status());
//     exe.Run(plan, &scope, {{"image", batch->tensors.at("image")},
//                            {"label", batch->tensors.at("label")}});
//   }
//   // The next Next() starts the next epoch, reshuffled.
//
// A loader holds columns of examples (dim 0 of each IdxArray) and yields
// them in batches of host tensors [batch, item dims...], each column
// converted to its dtype as value * scale + shift. Shuffling draws a new
// permutation per epoch from (seed, epoch) alone, so runs are repeatable
// whatever the timing. The last, short batch of an epoch is yielded unless
// drop_last. With prefetch, one background thread prepares up to
// `prefetch_batches` batches ahead; batches live in pinned host memory
// (Device::host_allocator() of gpu:0) when a GPU device is present, so
// host->device copies of them can be asynchronous, else in plain host
// memory. The loader owns its thread (joined on destruction). Next() is
// for one consumer thread; the loader is not otherwise thread-safe.
#ifndef TANDEM_DATA_DATA_LOADER_H_
#define TANDEM_DATA_DATA_LOADER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "data/idx.h"
#include "framework/memory/allocator.h"
#include "framework/tensor/tensor.h"
#include "framework/types/data_type.h"

namespace tandem {

// One named input of the examples.
struct Column {
  std::string name;
  IdxArray data;  // dim 0: examples
  DataType dtype = DataType::kFloat32;
  double scale = 1, shift = 0;  // element = static_cast<dtype>(value * scale + shift)
};

struct DataLoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
  bool prefetch = true;      // a background thread prepares batches ahead
  int prefetch_batches = 2;  // how many, at most
};

struct Batch {
  int64_t epoch = 0;
  int64_t index = 0;                      // batch number within the epoch
  int64_t size = 0;                       // examples
  std::map<std::string, Tensor> tensors;  // by column name, [size, item dims...]
};

class DataLoader {
 public:
  // InvalidArgument naming the columns if they disagree on the number of
  // examples, if there are none, if a name repeats, if a dtype is not
  // float32, float64, int32 or int64, or for a batch size < 1.
  static absl::StatusOr<std::unique_ptr<DataLoader>> Create(std::vector<Column> columns,
                                                            DataLoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The next batch of the current epoch; OutOfRange ("end of epoch N")
  // once the epoch is exhausted, after which the next call starts epoch
  // N + 1. ResourceExhausted if host memory for a batch cannot be had.
  absl::StatusOr<Batch> Next();

  int64_t num_examples() const { return num_examples_; }
  int64_t batches_per_epoch() const;
  // The most bytes of batches the loader itself holds at once, the ones
  // Next() has handed out apart: with prefetch, `prefetch_batches` items
  // queued and one made while it waits for room (an end-of-epoch mark is an
  // item without bytes; the last batch of an epoch may be short); 0 without
  // prefetch. For memory estimates.
  int64_t MaxBytesHeld() const;
  // Where batches are allocated: pinned memory of gpu:0, or the host's.
  Allocator* allocator() const { return allocator_; }

 private:
  DataLoader(std::vector<Column> columns, DataLoaderOptions options, int64_t num_examples);

  // A batch, or the end of an epoch (end_of_epoch), or an error.
  struct Item {
    absl::StatusOr<Batch> batch;
    bool end_of_epoch = false;
  };
  // The item after `epoch_`, `batch_`; advances them.
  Item Produce();
  absl::StatusOr<Batch> MakeBatch(int64_t epoch, int64_t index) const;
  void Shuffle(int64_t epoch);
  void PrefetchLoop();

  const std::vector<Column> columns_;
  const DataLoaderOptions options_;
  const int64_t num_examples_;
  Allocator* allocator_;

  // Producer state (the prefetch thread's, or Next()'s without prefetch).
  int64_t epoch_ = 0, batch_ = 0;
  std::vector<int64_t> order_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stop_ = false;
  std::thread thread_;
};

// The Fashion-MNIST (or MNIST) files of `dir`, "train" or "t10k", as the
// columns "image" (float32 [n, 28, 28], pixels / 255) and "label" (int64
// [n]): "<dir>/<split>-images-idx3-ubyte.gz" and "-labels-idx1-ubyte.gz".
// InvalidArgument naming both files if they are not uint8 images [n, rows,
// cols] and uint8 labels [n]; ReadIdxFile's errors otherwise.
absl::StatusOr<std::vector<Column>> FashionMnistColumns(const std::string& dir, bool train);

}  // namespace tandem

#endif  // TANDEM_DATA_DATA_LOADER_H_
