package inbox

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// TestOperatorGetBodyIsStrictJSON: whatever a stored body holds, the read
// of its delivery is JSON a strict reader takes (no raw byte that is not
// UTF-8, no lone surrogate escape): a body that is not valid UTF-8 comes
// as base64 with body_encoding, one whose JSON holds a lone surrogate as a
// string of its text; a valid JSON body keeps today's shape.
func TestOperatorGetBodyIsStrictJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body   string
		wantEncoding string
		wantString   bool // body is the stored text as a JSON string
	}{
		{"raw 0xff in a JSON string", `{"data":{"id":"coll-` + "\xff" + `"}}`, BodyBase64, false},
		{"raw bytes, not JSON", "\xfe\xff\x00", BodyBase64, false},
		{"lone surrogate escape", `{"data":{"id":"coll-\ud800"}}`, "", true},
		{"JSON", `{"data":{"id":"coll-é","n":1}}`, "", false},
		{"duplicate names", `{"a":1,"a":2}`, "", false},
	}
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		h := operatorRouter(NewOperators(st, testLogger(t), newTestClock().Now))
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				id := insert(t, st, newTestClock().Now(), tt.body)[0]
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/deliveries/"+id, nil))
				raw := rec.Body.Bytes()
				// Strict on text; duplicate names are JSON to every reader.
				strict := jsontext.Value(raw).IsValid(jsontext.AllowDuplicateNames(true))
				if rec.Code != http.StatusOK || !strict {
					t.Fatalf("GET = %d, strict JSON %t: %q", rec.Code, strict, raw)
				}
				var got struct {
					Body         json.RawMessage `json:"body"`
					BodyEncoding *string         `json:"body_encoding"`
				}
				if err := json.Unmarshal(raw, &got); err != nil {
					t.Fatal(err)
				}
				var enc string
				if got.BodyEncoding != nil {
					enc = *got.BodyEncoding
				}
				if enc != tt.wantEncoding {
					t.Fatalf("body_encoding = %q, want %q (%s)", enc, tt.wantEncoding, raw)
				}
				var s string
				switch {
				case tt.wantEncoding == BodyBase64:
					if json.Unmarshal(got.Body, &s) != nil {
						t.Fatalf("body = %s, want a base64 string", got.Body)
					}
					if b, err := base64.StdEncoding.DecodeString(s); err != nil || string(b) != tt.body {
						t.Fatalf("body decodes to %q (%v), want %q", b, err, tt.body)
					}
				case tt.wantString:
					if json.Unmarshal(got.Body, &s) != nil || s != tt.body {
						t.Fatalf("body = %s, want the string %q", got.Body, tt.body)
					}
				default:
					if string(got.Body) != tt.body {
						t.Fatalf("body = %s, want the stored JSON %s", got.Body, tt.body)
					}
				}
			})
		}
	})
}
