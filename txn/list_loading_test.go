package txn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestListWhileLoading: while any led partition of __transaction_state
// loads, Kafka's TransactionStateManager.listTransactionStates answers
// COORDINATOR_LOAD_IN_PROGRESS alone, without the ids of the partitions
// already loaded.
func TestListWhileLoading(t *testing.T) {
	clock := &testClock{now: time.Unix(1_700_000_000, 0)}
	c := newTestCoordinator(t, newMemLog(), &fakeMarkers{}, clock)
	c.SetLeadership(2, map[int32]int32{0: 5})
	c.LoadPending(context.Background())
	id := "tx"
	for i := 0; PartitionFor(id, 2) != 0; i++ {
		id = fmt.Sprintf("tx%d", i)
	}
	if res := c.InitProducerID(context.Background(), id, 60000, -1, -1); res.ErrorCode != 0 {
		t.Fatalf("init: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	if list, code := c.List(ListFilter{}); code != 0 || len(list) != 1 {
		t.Fatalf("list with every partition loaded: %v, %d ids", kerr.ErrorForCode(code), len(list))
	}
	c.SetLeadership(2, map[int32]int32{0: 5, 1: 5}) // partition 1 starts loading
	if list, code := c.List(ListFilter{}); code != kerr.CoordinatorLoadInProgress.Code || len(list) != 0 {
		t.Fatalf("list while a partition loads: %v with %d ids, want COORDINATOR_LOAD_IN_PROGRESS alone", kerr.ErrorForCode(code), len(list))
	}
}
