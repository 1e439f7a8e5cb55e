package linear

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// FuzzParse: Parse never panics and keeps the adapter contract
// (adaptertest.CheckParsed); a Linear issue's entity is its external ID.
func FuzzParse(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := Adapter{}.Parse(workspace, http.Header{}, body)
		adaptertest.CheckParsed(t, connectors.ProviderLinear, workspace, "linear", e, err)
		adaptertest.CheckText(t, "linear", body, e, err)
		if err == nil && e.Action != connectors.ActionIgnore && e.EntityKey != e.ExternalID {
			t.Fatalf("Parse: ExternalID %q, EntityKey %q", e.ExternalID, e.EntityKey)
		}
	})
}

// FuzzDecodeWebhook: decodeWebhook accepts exactly the bodies encoding/json
// decodes into the same members (the envelope, an Issue's data and an
// Attachment's), to the same values, but those holding invalid text, which
// it refuses where encoding/json takes them with U+FFFD.
func FuzzDecodeWebhook(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		var want webhook
		var wantIssue *issueData
		var wantAttachment *attachmentData
		wantErr := json.Unmarshal(body, &want)
		if wantErr == nil && !isNull(want.Data) {
			switch want.Type {
			case TypeIssue:
				wantIssue = &issueData{}
				wantErr = json.Unmarshal(want.Data, wantIssue)
			case TypeAttachment:
				wantAttachment = &attachmentData{}
				wantErr = json.Unmarshal(want.Data, wantAttachment)
			}
		}
		got, gotIssue, gotAttachment, err := decodeWebhook(body)
		if adaptertest.CheckDecodeRefusesText(t, body, err) {
			return
		}
		switch {
		case (err == nil) != (wantErr == nil):
			t.Fatalf("decodeWebhook error = %v, encoding/json error = %v", err, wantErr)
		case err != nil:
			return
		case !reflect.DeepEqual(*got, want):
			t.Fatalf("decodeWebhook = %+v, encoding/json = %+v", *got, want)
		case !reflect.DeepEqual(gotIssue, wantIssue):
			t.Fatalf("decodeWebhook data = %+v, encoding/json = %+v", gotIssue, wantIssue)
		case !reflect.DeepEqual(gotAttachment, wantAttachment):
			t.Fatalf("decodeWebhook attachment = %+v, encoding/json = %+v", gotAttachment, wantAttachment)
		}
	})
}

var fuzzSecrets = [][]byte{[]byte("current-secret"), []byte("previous-secret")}

// FuzzVerify: Verify never panics, answers only the verification errors,
// and accepts exactly the hex HMAC-SHA256 signatures of the body under a
// secret whose body's webhookTimestamp is within the window of the clock.
func FuzzVerify(f *testing.F) {
	now := fixedClock
	fresh := []byte(`{"type":"Issue","webhookTimestamp":1772442000123}`)
	stale := []byte(`{"type":"Issue","webhookTimestamp":1772441000000}`)
	f.Add(connectors.HMACSHA256Hex(fuzzSecrets[0], fresh), fresh)
	f.Add(connectors.HMACSHA256Hex(fuzzSecrets[1], fresh), fresh)
	f.Add(connectors.HMACSHA256Hex(fuzzSecrets[0], stale), stale)
	f.Add("sha256="+connectors.HMACSHA256Hex(fuzzSecrets[0], fresh), fresh)
	f.Add("", []byte{})
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		h := http.Header{}
		h.Set(HeaderSignature, sig)
		err := Adapter{Now: func() time.Time { return now }}.Verify(h, body, fuzzSecrets)
		signed := false
		for _, s := range fuzzSecrets {
			if strings.EqualFold(strings.TrimSpace(sig), connectors.HMACSHA256Hex(s, body)) {
				signed = true
			}
		}
		var stamp struct {
			WebhookTimestamp *float64 `json:"webhookTimestamp"`
		}
		inWindow := json.Unmarshal(body, &stamp) == nil && stamp.WebhookTimestamp != nil &&
			math.Abs(float64(now.UnixMilli())-*stamp.WebhookTimestamp) <= 60_000
		valid := signed && inWindow
		switch {
		case err == nil && !valid:
			t.Fatalf("Verify accepted %q over %q", sig, body)
		case err != nil && valid:
			t.Fatalf("Verify(%q) = %v, want nil", sig, err)
		case err != nil && !errors.Is(err, connectors.ErrBadSignature) && !errors.Is(err, connectors.ErrMissingSignature) &&
			!errors.Is(err, connectors.ErrStaleTimestamp):
			t.Fatalf("Verify = %v, not a verification error", err)
		case signed && !inWindow && !errors.Is(err, connectors.ErrStaleTimestamp):
			t.Fatalf("Verify of a signed body out of the window = %v, want %v", err, connectors.ErrStaleTimestamp)
		}
	})
}
