package events

import (
	"errors"
	"math"
	"testing"
)

func TestIDRoundTripAndOrder(t *testing.T) {
	t.Parallel()
	ids := []int64{1, 9, 10, 15, 16, 255, 256, 1 << 32, math.MaxInt64}
	for i, id := range ids {
		s := FormatID(id)
		got, err := ParseID(s)
		if err != nil || got != id {
			t.Fatalf("ParseID(FormatID(%d)) = %d, %v", id, got, err)
		}
		if i > 0 && FormatID(ids[i-1]) >= s {
			t.Fatalf("FormatID(%d) = %q does not sort after FormatID(%d) = %q", id, s, ids[i-1], FormatID(ids[i-1]))
		}
	}
}

func TestParseIDRefusesForeignIDs(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "evt_", "42", "evt_42", "evt_000000000000002A", "msg_000000000000002a",
		"evt_8000000000000000", "evt_-00000000000001", "evt_00000000000000zz"} {
		if _, err := ParseID(s); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ParseID(%q) = %v, want ErrInvalidID", s, err)
		}
	}
}
