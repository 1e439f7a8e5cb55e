package postgres

import "testing"

// TestDeferredConns: processing gets an eighth of the main pool's
// connections, never fewer than two (the default pool of 16 gives it 2).
func TestDeferredConns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		main, want int32
	}{
		{main: 1, want: 2},
		{main: 4, want: 2},
		{main: 16, want: 2},
		{main: 24, want: 3},
		{main: 64, want: 8},
	}
	for _, tt := range tests {
		if got := deferredConns(tt.main); got != tt.want {
			t.Errorf("deferredConns(%d) = %d, want %d", tt.main, got, tt.want)
		}
	}
}
