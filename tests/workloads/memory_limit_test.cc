// A device memory cap (--sim_memory_limit_mb here; --gpu_memory_limit_mb on
// GPUs, the same mechanism) that the embedding table cannot fit in: the
// all-device embedding_offload program fails with ResourceExhausted naming
// the op, the variable, the bytes and the device_guard("cpu") hint, and the
// program with the table under device_guard("cpu") trains within the cap.
// Its own binary: the flag is read when the sim devices are created.
#include "framework/device/device_registry.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "models/embedding/embedding_model.h"

DECLARE_int64(sim_memory_limit_mb);

namespace tandem {
namespace {

using ::testing::AllOf;

TEST(MemoryLimit, TableTooLargeForTheDeviceFailsUnlessGuardedOnTheCpu) {
  FLAGS_sim_memory_limit_mb = 4;
  const Place sim = *ParsePlace("sim:0");
  ASSERT_OK_AND_ASSIGN(Device * device, DeviceRegistry::Global().GetDevice(sim));
  ASSERT_EQ(device->allocator()->GetStats().bytes_limit, 4 << 20);
  EmbeddingConfig config;
  config.rows = 100000;  // 100000 x 16 float32: 6.4 MB
  config.dim = 16;
  config.batch = 32;
  config.is_sparse = true;
  config.learning_rate = 1.0;
  for (bool table_on_cpu : {false, true}) {
    SCOPED_TRACE(table_on_cpu ? "guarded" : "all on sim:0");
    config.table_on_cpu = table_on_cpu;
    ProgramBuilder b;
    ASSERT_OK_AND_ASSIGN(EmbeddingModel m, BuildEmbeddingModel(config, &b));
    Executor exe(sim);
    Scope scope;
    absl::Status startup = exe.Run(b.startup_program(), &scope).status();
    if (!table_on_cpu) {
      EXPECT_THAT(startup,
                  StatusIs(absl::StatusCode::kResourceExhausted,
                           AllOf(HasSubstr("op 'uniform_random'"), HasSubstr("variable 'emb_w'"),
                                 HasSubstr("float32[100000, 16]"), HasSubstr("on sim:0"),
                                 HasSubstr("requested 6400000 bytes"), HasSubstr("limit 4194304"),
                                 HasSubstr("device_guard(\"cpu\")"))));
      continue;
    }
    ASSERT_OK(startup);
    EXPECT_EQ(scope.Find("emb_w")->tensor().place(), CPUPlace());
    ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"ids"}, {m.loss.name}));
    std::vector<double> ids(config.batch);
    for (int64_t i = 0; i < config.batch; ++i) ids[i] = (i * 131) % 1000;
    const Tensor ids_t = MakeTensor(DataType::kInt64, Shape({config.batch}), ids);
    double first = 0, last = 0;
    for (int step = 0; step < 20; ++step) {
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> loss, exe.Run(plan.get(), &scope, {{"ids", ids_t}}));
      last = ToDoubles(loss[0])[0];
      if (step == 0) first = last;
    }
    EXPECT_LT(last, first);
    EXPECT_LE(device->allocator()->GetStats().peak_bytes_in_use, 4 << 20);
  }
}

}  // namespace
}  // namespace tandem
