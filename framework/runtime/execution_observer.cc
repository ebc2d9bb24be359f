#include "framework/runtime/execution_observer.h"

#include <atomic>

namespace tandem {
namespace {

std::atomic<ExecutionObserver*> g_observer{nullptr};

}  // namespace

void SetExecutionObserver(ExecutionObserver* observer) { g_observer.store(observer); }
ExecutionObserver* GetExecutionObserver() { return g_observer.load(std::memory_order_acquire); }

}  // namespace tandem
