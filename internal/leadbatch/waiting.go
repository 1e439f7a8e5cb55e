package leadbatch

import "context"

// Waiting returns, in order, the indexes of the members of batch whose
// callers still wait (their context, ctx(m), has not ended), and calls gone
// with the index of every other member. A batch's Run writes or reads the
// waiting members together and lets the others run alone, each answering
// its own cancellation, so that no caller that has gone holds up the rest.
func Waiting[M any](batch []M, ctx func(M) context.Context, gone func(i int)) []int {
	var waiting []int
	for i, m := range batch {
		if ctx(m).Err() != nil {
			gone(i)
			continue
		}
		waiting = append(waiting, i)
	}
	return waiting
}
