package linear

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// TestParseRefusesInvalidText: two issues whose IDs differ only in bytes
// that are not valid UTF-8 (or in lone surrogate escapes) must not become
// one: the delivery is refused, naming the member, where encoding/json
// would have given both the same ID with U+FFFD.
func TestParseRefusesInvalidText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture, field string
		edit           func(m map[string]any, v string)
	}{
		{"issue.create.json", "data.id", func(m map[string]any, v string) { adaptertest.Obj(m, "data")["id"] = v }},
		{"issue.create.json", "data.title", func(m map[string]any, v string) { adaptertest.Obj(m, "data")["title"] = v }},
		{"attachment.create.json", "data.issueId", func(m map[string]any, v string) { adaptertest.Obj(m, "data")["issueId"] = v }},
		{"comment.create.json", "data.body", func(m map[string]any, v string) { adaptertest.Obj(m, "data")["body"] = v }},
	} {
		for way, body := range adaptertest.InvalidTextBodies(t, adaptertest.Fixture(t, fixtureDir, tc.fixture), tc.edit) {
			t.Run(tc.fixture+" "+tc.field+" "+way, func(t *testing.T) {
				t.Parallel()
				e, err := Adapter{}.Parse(workspace, http.Header{}, body)
				adaptertest.CheckRefusesText(t, tc.field, e, err)
			})
		}
	}
}

// TestVerifyLeavesTextToParse: a signed delivery in the window whose body
// holds invalid text verifies; it is Parse that refuses it, naming the
// member, rather than a 401 blaming its timestamp.
func TestVerifyLeavesTextToParse(t *testing.T) {
	t.Parallel()
	body := []byte(`{"type":"Issue","data":{"id":"coll-\ud800"},"webhookTimestamp":1772442000123}`)
	h := http.Header{}
	h.Set(HeaderSignature, connectors.HMACSHA256Hex(fuzzSecrets[0], body))
	if err := (Adapter{Now: func() time.Time { return fixedClock }}).Verify(h, body, fuzzSecrets); err != nil {
		t.Fatalf("Verify = %v, want nil", err)
	}
}

// TestParseRefusesControlCharactersInIDs: an issue or attachment ID with a
// NUL or another control character is a malformed payload naming the
// member, the same on both databases (PostgreSQL would refuse the NUL in
// its first query, SQLite only when the external ID is validated).
func TestParseRefusesControlCharactersInIDs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture, field string
		edit           func(m map[string]any)
	}{
		{"issue.create.json", "data.id", func(m map[string]any) { adaptertest.Obj(m, "data")["id"] = "a\x00b" }},
		{"issue.create.json", "data.id", func(m map[string]any) { adaptertest.Obj(m, "data")["id"] = "a\nb" }},
		{"attachment.create.json", "data.issueId", func(m map[string]any) { adaptertest.Obj(m, "data")["issueId"] = "a\x00b" }},
		{"attachment.create.json", "data.id", func(m map[string]any) { adaptertest.Obj(m, "data")["id"] = "a\x7fb" }},
	} {
		body := adaptertest.Mutate(t, adaptertest.Fixture(t, fixtureDir, tc.fixture), tc.edit)
		_, err := Adapter{}.Parse(workspace, http.Header{}, body)
		if !errors.Is(err, connectors.ErrMalformedPayload) || !strings.Contains(err.Error(), tc.field+" contains a control character") {
			t.Errorf("Parse of %s with a control character in %s = %v, want a malformed payload naming it", tc.fixture, tc.field, err)
		}
	}
}
