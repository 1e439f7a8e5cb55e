package leadbatch

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestQueue: a call that finds no batch running runs at once, alone; the
// calls that queue meanwhile run as the next batches, each at most Max
// members, one leader running at most MaxLed in a row; every call gets
// its own result.
func TestQueue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		max, maxLed int
		queued      int
		wantSizes   []int
	}{
		{"a lone call runs alone", 64, 8, 0, []int{1}},
		{"calls that queue run together", 64, 8, 5, []int{1, 5}},
		{"a batch holds at most Max", 3, 8, 5, []int{1, 3, 2}},
		{"a leader runs at most MaxLed batches, then hands over", 2, 2, 5, []int{1, 2, 2, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var sizes []int
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			q := &Queue[int, string]{Max: tc.max, MaxLed: tc.maxLed, Run: func(batch []int) []string {
				mu.Lock()
				sizes = append(sizes, len(batch))
				mu.Unlock()
				once.Do(func() { close(entered); <-release })
				out := make([]string, len(batch))
				for i, m := range batch {
					out[i] = fmt.Sprint("done ", m)
				}
				return out
			}}
			results := make([]string, tc.queued+1)
			var wg sync.WaitGroup
			wg.Go(func() { results[0] = q.Do(0) })
			<-entered
			for i := 1; i <= tc.queued; i++ {
				wg.Go(func() { results[i] = q.Do(i) })
			}
			deadline := time.Now().Add(time.Minute)
			for q.Queued() != tc.queued {
				if time.Now().After(deadline) {
					t.Fatalf("%d calls queued, want %d", q.Queued(), tc.queued)
				}
				time.Sleep(time.Millisecond)
			}
			close(release)
			wg.Wait()
			for i, r := range results {
				if want := fmt.Sprint("done ", i); r != want {
					t.Errorf("call %d = %q, want %q", i, r, want)
				}
			}
			if !slices.Equal(sizes, tc.wantSizes) {
				t.Errorf("batch sizes %v, want %v", sizes, tc.wantSizes)
			}
			if q.Queued() != 0 {
				t.Errorf("%d calls still queued", q.Queued())
			}
		})
	}
}
