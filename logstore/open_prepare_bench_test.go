package logstore

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkDirOpenNew creates new partition logs (topic id set, so each
// writes and fsyncs its partition.metadata), one partition per op, on the
// disk under the test's temporary directory, from 1 and from 16 goroutines
// (the broker's log opener opens a new topic's replicas concurrently).
//
//	go test ./logstore -run '^$' -bench BenchmarkDirOpenNew -benchtime=2000x
func BenchmarkDirOpenNew(b *testing.B) {
	for _, workers := range []int{1, 16} {
		b.Run(fmt.Sprintf("openers=%d", workers), func(b *testing.B) {
			d, err := OpenDir(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			id := [16]byte{7, 7}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						if _, err := d.Open(TopicPartition{Topic: "bench", Partition: int32(i)}, id, DefaultConfig()); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			if err := d.Close(nil); err != nil {
				b.Fatal(err)
			}
		})
	}
}
