package store_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/internal/store"
)

func TestDeliveryBodyEncoding(t *testing.T) {
	t.Parallel()
	fixture, err := os.ReadFile("../../fixtures/github/issues.opened.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		raw          []byte
		wantEncoding string
		maxRatio     float64 // stored/raw at most; 0: not checked
	}{
		{"github webhook", fixture, store.BodyS2, 0.35},
		{"below the size worth compressing", []byte(`{"zen":"Approachable is better than simple."}`), store.BodyIdentity, 0},
		{"empty", []byte{}, store.BodyIdentity, 0},
		{"large repetitive body", []byte(strings.Repeat(`{"labels":["bug"]},`, 100_000)), store.BodyS2, 0.1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stored, encoding := store.EncodeDeliveryBody(tc.raw)
			if encoding != tc.wantEncoding {
				t.Fatalf("encoding = %q, want %q", encoding, tc.wantEncoding)
			}
			if tc.maxRatio > 0 && float64(len(stored)) > tc.maxRatio*float64(len(tc.raw)) {
				t.Errorf("stored %d of %d bytes, want at most %.0f%%", len(stored), len(tc.raw), 100*tc.maxRatio)
			}
			got, err := store.DecodeDeliveryBody(stored, encoding)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !bytes.Equal(got, tc.raw) {
				t.Errorf("round trip changed the body (%d bytes, want %d)", len(got), len(tc.raw))
			}
		})
	}
}

func TestDecodeDeliveryBodyRefusesDamage(t *testing.T) {
	t.Parallel()
	stored, _ := store.EncodeDeliveryBody(bytes.Repeat([]byte(`{"a":"b"}`), 200))
	tests := []struct {
		name     string
		stored   []byte
		encoding string
	}{
		{"truncated block", stored[:len(stored)/2], store.BodyS2},
		{"not a block", []byte("plain text"), store.BodyS2},
		{"claims more than the body cap", []byte{0x81, 0x80, 0x80, 0x0d}, store.BodyS2}, // varint 26 MiB + 1
		{"unknown encoding", stored, "gzip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got, err := store.DecodeDeliveryBody(tc.stored, tc.encoding); err == nil {
				t.Errorf("decoded %d bytes, want an error", len(got))
			}
		})
	}
}

// FuzzDeliveryBody: every body survives the round trip, and decoding any
// stored bytes never panics.
func FuzzDeliveryBody(f *testing.F) {
	f.Add([]byte(`{"action":"opened"}`))
	f.Add(bytes.Repeat([]byte(`{"action":"opened"}`), 64))
	if fixture, err := os.ReadFile("../../fixtures/github/issues.opened.json"); err == nil {
		f.Add(fixture)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		stored, encoding := store.EncodeDeliveryBody(raw)
		got, err := store.DecodeDeliveryBody(stored, encoding)
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("round trip of %d bytes: %d bytes, err %v", len(raw), len(got), err)
		}
		// Damaged or foreign rows: an error, never a panic or a huge allocation.
		if got, err := store.DecodeDeliveryBody(raw, store.BodyS2); err == nil && len(got) > store.MaxStoredBodyBytes {
			t.Fatalf("decoded %d bytes from %d stored", len(got), len(raw))
		}
	})
}
