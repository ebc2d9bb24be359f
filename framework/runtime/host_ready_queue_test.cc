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

TEST(HostReadyQueueTest, StepsThatFeedADeviceStartFirstEachKindInProgramOrder) {
  HostReadyQueue<int> queue;
  EXPECT_TRUE(queue.empty());
  // Tasks named by their step index; pushed out of program order.
  queue.Push(4, /*feeds_device=*/false, {0, 4});
  queue.Push(2, /*feeds_device=*/false, {0, 2});
  queue.Push(5, /*feeds_device=*/true, {0, 5});
  queue.Push(1, /*feeds_device=*/false, {0, 1});
  queue.Push(3, /*feeds_device=*/true, {0, 3});
  EXPECT_FALSE(queue.empty());
  EXPECT_EQ(Drain(&queue), (std::vector<int>{3, 5, 1, 2, 4}));
}

TEST(HostReadyQueueTest, AnEarlierRunsStepsGoFirstWhateverTheirIndex) {
  HostReadyQueue<int> queue;
  queue.Push(102, false, {1, 2});  // run 1's step 2
  queue.Push(9, false, {0, 9});
  queue.Push(101, false, {1, 1});
  queue.Push(7, false, {0, 7});
  EXPECT_EQ(Drain(&queue), (std::vector<int>{7, 9, 101, 102}));
}

// The offloaded optimizer's backlog: the backward makes the updates of the
// last layers ready first; the first layer's, needed first by the next
// forward, overtakes those still waiting.
TEST(HostReadyQueueTest, ALaterReadyUpdateOfAnEarlierLayerOvertakesTheWaitingOnes) {
  HostReadyQueue<int> queue;
  queue.Push(30, false, {0, 30});
  queue.Push(20, false, {0, 20});
  ASSERT_EQ(queue.front(), 20);
  queue.pop_front();
  queue.Push(10, false, {0, 10});
  queue.Push(107, true, {1, 7});  // the next run's cast of what update 20 wrote
  EXPECT_EQ(Drain(&queue), (std::vector<int>{107, 10, 30}));
}

TEST(HostReadyQueueTest, ATaskQueuedTwiceKeepsArrivalOrderAmongItsCopies) {
  HostReadyQueue<int> queue;
  queue.Push(1, false, {0, 3});
  queue.Push(2, false, {0, 3});
  EXPECT_EQ(Drain(&queue), (std::vector<int>{1, 2}));
}

TEST(HostReadyQueueTest, RemoveIfDropsFromBothKinds) {
  HostReadyQueue<int> queue;
  for (int i = 0; i < 6; ++i) queue.Push(i, i % 3 == 0, {0, i});
  queue.RemoveIf([](int t) { return t % 2 == 0; });
  EXPECT_EQ(Drain(&queue), (std::vector<int>{3, 1, 5}));
}

}  // namespace
}  // namespace tandem
