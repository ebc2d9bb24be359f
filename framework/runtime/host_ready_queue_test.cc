#include "framework/runtime/host_ready_queue.h"

#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace {

std::vector<int> Drain(HostReadyQueue<int>* queue) {
  std::vector<int> order;
  while (!queue->empty()) {
    order.push_back(queue->front());
    queue->pop_front();
  }
  return order;
}

TEST(HostReadyQueueTest, StepsThatFeedADeviceStartFirstEachKindInArrivalOrder) {
  HostReadyQueue<int> queue;
  EXPECT_TRUE(queue.empty());
  queue.Push(1, /*feeds_device=*/false);
  queue.Push(2, /*feeds_device=*/false);
  queue.Push(3, /*feeds_device=*/true);
  queue.Push(4, /*feeds_device=*/false);
  queue.Push(5, /*feeds_device=*/true);
  EXPECT_FALSE(queue.empty());
  EXPECT_EQ(Drain(&queue), (std::vector<int>{3, 5, 1, 2, 4}));
}

TEST(HostReadyQueueTest, AFeedingStepPushedLaterOvertakesTheWaitingRest) {
  HostReadyQueue<int> queue;
  queue.Push(1, false);
  queue.Push(2, false);
  ASSERT_EQ(queue.front(), 1);
  queue.pop_front();
  queue.Push(7, true);  // e.g. the next run's cast, ready after update 1
  EXPECT_EQ(Drain(&queue), (std::vector<int>{7, 2}));
}

TEST(HostReadyQueueTest, RemoveIfDropsFromBothKinds) {
  HostReadyQueue<int> queue;
  for (int i = 0; i < 6; ++i) queue.Push(i, i % 3 == 0);
  queue.RemoveIf([](int t) { return t % 2 == 0; });
  EXPECT_EQ(Drain(&queue), (std::vector<int>{3, 1, 5}));
}

}  // namespace
}  // namespace tandem
