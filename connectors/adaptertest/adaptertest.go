// Package adaptertest holds what every provider adapter's tests share: the
// fixture seed corpus and the invariants a parsed event must satisfy, so the
// three fuzz targets check one contract.
package adaptertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/trackergateway/gateway/connectors"
)

// AddFixtures adds every *.json body in dir to the fuzz corpus.
func AddFixtures(f *testing.F, dir string) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// CheckParsed asserts the Adapter.Parse contract for one result: errors wrap
// ErrMalformedPayload; a mapped event has the provider, an external ID of the
// form provider:host:kind:id, an entity key, a source reference and a
// repository; a transfer names its previous entity; contributions come
// exactly with the contribution kind; a link event names its issue and
// complete links.
func CheckParsed(t *testing.T, provider, host, event string, e connectors.Event, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, connectors.ErrMalformedPayload) {
			t.Fatalf("Parse(%q) error %v does not wrap ErrMalformedPayload", event, err)
		}
		return
	}
	if e.Provider != provider || e.EventName == "" {
		t.Fatalf("Parse(%q) = provider %q, event name %q", event, e.Provider, e.EventName)
	}
	if e.Action == connectors.ActionIgnore {
		return
	}
	if !strings.HasPrefix(e.ExternalID, provider+":"+host+":"+e.Kind+":") {
		t.Fatalf("Parse(%q).ExternalID = %q, Kind %q", event, e.ExternalID, e.Kind)
	}
	if e.Action == connectors.ActionLink || e.Action == connectors.ActionUnlink {
		// About an issue the delivery names only by ID: no source.
		if e.EntityKey != e.ExternalID || e.Kind != connectors.KindIssue || len(e.Links) == 0 || e.Contribution != nil {
			t.Fatalf("Parse(%q) = %+v: a link event names its issue and its links", event, e)
		}
		for _, l := range e.Links {
			if l.ID == "" || l.Provider == "" || l.Host == "" || l.Repository == "" || l.Number < 1 || l.UpdatedAt.IsZero() {
				t.Fatalf("Parse(%q): incomplete link %+v", event, l)
			}
		}
		return
	}
	if e.EntityKey == "" || e.Source.Ref == "" || e.Repository == "" {
		t.Fatalf("Parse(%q) = %+v: missing EntityKey, Source.Ref or Repository", event, e)
	}
	if e.Action == connectors.ActionTransfer && e.PreviousExternalID == "" {
		t.Fatalf("Parse(%q): transfer without PreviousExternalID: %+v", event, e)
	}
	isContribution := e.Kind == connectors.KindPullRequest || e.Kind == connectors.KindMergeRequest
	if isContribution != (e.Contribution != nil) {
		t.Fatalf("Parse(%q): Kind %q with Contribution %v", event, e.Kind, e.Contribution)
	}
}

// Fixture reads dir/name.
func Fixture(t testing.TB, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CheckFixturesCovered fails for every *.json in dir that names does not
// list: a new fixture must come with its expected event.
func CheckFixturesCovered(t *testing.T, dir string, names []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no fixtures in %s", dir)
	}
	for _, f := range files {
		if name := filepath.Base(f); !slices.Contains(names, name) {
			t.Errorf("fixture %s has no case in fixtureCases", name)
		}
	}
}

// MustTime parses RFC 3339; "" is the zero time.
func MustTime(t testing.TB, s string) time.Time {
	t.Helper()
	if s == "" {
		return time.Time{}
	}
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// Mutate decodes body, lets edit change it, and encodes it again.
func Mutate(t testing.TB, body []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Obj returns m[key] as an object.
func Obj(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

// Want is the event a fixture must parse to.
type Want struct {
	Provider     string
	EventName    string
	Action       connectors.Action
	Kind         string
	ExternalID   string
	PreviousID   string
	EntityKey    string
	Repository   string
	Title        string
	Labels       []string
	Closed       bool
	UpdatedAt    time.Time
	Source       connectors.Source
	FormerRefs   []string
	Links        []connectors.ContributionLink
	Contribution *connectors.Contribution
}

// CheckEvent compares every field of got with want; UpdatedAt must also be
// set on every event the gateway acts on.
func CheckEvent(t *testing.T, got connectors.Event, want Want) {
	t.Helper()
	if got.Provider != want.Provider {
		t.Errorf("Provider = %v, want %v", got.Provider, want.Provider)
	}
	if got.EventName != want.EventName {
		t.Errorf("EventName = %v, want %v", got.EventName, want.EventName)
	}
	if got.Action != want.Action {
		t.Errorf("Action = %v, want %v", got.Action, want.Action)
	}
	if got.Kind != want.Kind {
		t.Errorf("Kind = %v, want %v", got.Kind, want.Kind)
	}
	if got.ExternalID != want.ExternalID {
		t.Errorf("ExternalID = %v, want %v", got.ExternalID, want.ExternalID)
	}
	if got.PreviousExternalID != want.PreviousID {
		t.Errorf("PreviousExternalID = %v, want %v", got.PreviousExternalID, want.PreviousID)
	}
	if got.EntityKey != want.EntityKey {
		t.Errorf("EntityKey = %v, want %v", got.EntityKey, want.EntityKey)
	}
	if got.Repository != want.Repository {
		t.Errorf("Repository = %v, want %v", got.Repository, want.Repository)
	}
	if got.Title != want.Title {
		t.Errorf("Title = %v, want %v", got.Title, want.Title)
	}
	if !slices.Equal(got.Labels, want.Labels) {
		t.Errorf("Labels = %v, want %v", got.Labels, want.Labels)
	}
	if got.Closed != want.Closed {
		t.Errorf("Closed = %v, want %v", got.Closed, want.Closed)
	}
	if !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("UpdatedAt = %v, want %v", got.UpdatedAt, want.UpdatedAt)
	}
	if want.Action != connectors.ActionIgnore && got.UpdatedAt.IsZero() {
		t.Errorf("UpdatedAt is zero")
	}
	if got.Source != want.Source {
		t.Errorf("Source = %+v, want %+v", got.Source, want.Source)
	}
	if !slices.Equal(got.FormerRefs, want.FormerRefs) {
		t.Errorf("FormerRefs = %v, want %v", got.FormerRefs, want.FormerRefs)
	}
	if !slices.Equal(got.Links, want.Links) {
		t.Errorf("Links = %+v, want %+v", got.Links, want.Links)
	}
	CheckContribution(t, got.Contribution, want.Contribution)
}

// CheckContribution compares every field of a parsed PR/MR.
func CheckContribution(t *testing.T, got, want *connectors.Contribution) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Errorf("Contribution = %+v, want nil", got)
		}
		return
	}
	if got == nil {
		t.Fatalf("Contribution = nil, want %+v", want)
	}
	if got.Kind != want.Kind {
		t.Errorf("Contribution.Kind = %v, want %v", got.Kind, want.Kind)
	}
	if got.ID != want.ID {
		t.Errorf("Contribution.ID = %v, want %v", got.ID, want.ID)
	}
	if got.Number != want.Number {
		t.Errorf("Contribution.Number = %v, want %v", got.Number, want.Number)
	}
	if got.Repository != want.Repository {
		t.Errorf("Contribution.Repository = %v, want %v", got.Repository, want.Repository)
	}
	if got.URL != want.URL {
		t.Errorf("Contribution.URL = %v, want %v", got.URL, want.URL)
	}
	if got.Title != want.Title {
		t.Errorf("Contribution.Title = %v, want %v", got.Title, want.Title)
	}
	if got.Body != want.Body {
		t.Errorf("Contribution.Body = %q, want %q", got.Body, want.Body)
	}
	if got.State != want.State {
		t.Errorf("Contribution.State = %v, want %v", got.State, want.State)
	}
	if got.Draft != want.Draft {
		t.Errorf("Contribution.Draft = %v, want %v", got.Draft, want.Draft)
	}
	if got.Merged != want.Merged {
		t.Errorf("Contribution.Merged = %v, want %v", got.Merged, want.Merged)
	}
	if !got.MergedAt.Equal(want.MergedAt) {
		t.Errorf("Contribution.MergedAt = %v, want %v", got.MergedAt, want.MergedAt)
	}
	if got.HeadBranch != want.HeadBranch {
		t.Errorf("Contribution.HeadBranch = %v, want %v", got.HeadBranch, want.HeadBranch)
	}
	if got.BaseBranch != want.BaseBranch {
		t.Errorf("Contribution.BaseBranch = %v, want %v", got.BaseBranch, want.BaseBranch)
	}
	if got.HeadSHA != want.HeadSHA {
		t.Errorf("Contribution.HeadSHA = %v, want %v", got.HeadSHA, want.HeadSHA)
	}
	if got.Author != want.Author {
		t.Errorf("Contribution.Author = %v, want %v", got.Author, want.Author)
	}
	if !got.UpdatedAt.Equal(want.UpdatedAt) || got.UpdatedAt.IsZero() {
		t.Errorf("Contribution.UpdatedAt = %v, want %v", got.UpdatedAt, want.UpdatedAt)
	}
	if !slices.Equal(got.References, want.References) {
		t.Errorf("Contribution.References = %v, want %v", got.References, want.References)
	}
}

// InvalidText reports whether body is JSON that is well formed but holds a
// string that is not valid UTF-8 text (raw bytes that are not, a lone
// surrogate escape): encoding/json, and so the providers' libraries, take
// it with U+FFFD in place, connectors.DecodeJSON refuses it.
func InvalidText(body []byte) bool {
	return walkTokens(body, jsontext.AllowInvalidUTF8(true)) == nil && walkTokens(body) != nil
}

func walkTokens(body []byte, opts ...jsontext.Options) error {
	dec := jsontext.NewDecoder(bytes.NewReader(body), append([]jsontext.Options{jsontext.AllowDuplicateNames(true)}, opts...)...)
	for {
		if _, err := dec.ReadToken(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// CheckText asserts what Parse makes of a body holding invalid text
// (InvalidText): never an entity, whose ID could then be another's with
// U+FFFD in it; an error about the text wraps both ErrMalformedPayload and
// connectors.ErrInvalidText.
func CheckText(t *testing.T, event string, body []byte, e connectors.Event, err error) {
	t.Helper()
	if errors.Is(err, connectors.ErrInvalidText) && !errors.Is(err, connectors.ErrMalformedPayload) {
		t.Fatalf("Parse(%q) error %v does not wrap ErrMalformedPayload", event, err)
	}
	if !InvalidText(body) {
		return
	}
	if err == nil && (e.ExternalID != "" || e.Action != connectors.ActionIgnore) {
		t.Fatalf("Parse(%q) of a body with invalid text = %+v, want an error", event, e)
	}
}

// CheckDecodeRefusesText asserts that decode, a connectors.DecodeJSON of
// body, refused a body holding invalid text with ErrInvalidText; it
// reports whether body holds some, for the caller to stop comparing with
// a library that takes it.
func CheckDecodeRefusesText(t *testing.T, body []byte, err error) bool {
	t.Helper()
	if !InvalidText(body) {
		return false
	}
	if err == nil {
		t.Fatalf("DecodeJSON accepted a body with invalid text: %q", body)
	}
	return true
}

// invalidTextPlaceholder marks where InvalidTextBodies puts invalid text.
const invalidTextPlaceholder = "@@invalid-text@@"

// InvalidTextBodies returns body with the string edit sets (through
// Mutate, to the value it is given) holding text that is not valid UTF-8,
// each way a payload can carry it: raw bytes, escaped lone surrogates.
// Keyed by the way.
func InvalidTextBodies(t testing.TB, body []byte, edit func(m map[string]any, value string)) map[string][]byte {
	t.Helper()
	marked := Mutate(t, body, func(m map[string]any) { edit(m, invalidTextPlaceholder) })
	if !bytes.Contains(marked, []byte(invalidTextPlaceholder)) {
		t.Fatalf("the edit set no string")
	}
	out := map[string][]byte{}
	for way, text := range map[string]string{
		"raw 0xff": "coll-\xff", "raw 0xfe": "coll-\xfe",
		"lone high surrogate": `coll-\ud800`, "lone low surrogate": `coll-\udc00`,
	} {
		out[way] = bytes.ReplaceAll(marked, []byte(invalidTextPlaceholder), []byte(text))
	}
	return out
}

// CheckRefusesText asserts that Parse refused a body with invalid text in
// field: an error wrapping ErrMalformedPayload and ErrInvalidText that
// names the field.
func CheckRefusesText(t *testing.T, field string, e connectors.Event, err error) {
	t.Helper()
	if !errors.Is(err, connectors.ErrMalformedPayload) || !errors.Is(err, connectors.ErrInvalidText) {
		t.Fatalf("Parse = %+v, %v; want an error wrapping ErrMalformedPayload and ErrInvalidText", e, err)
	}
	if want := field + " is not valid UTF-8 text"; !strings.Contains(err.Error(), want) {
		t.Fatalf("Parse error = %q, want it to name %q", err, want)
	}
}

// CheckEveryValueVerified asserts that verify refuses a request whose
// signature header holds a good signature and a forged one, in either
// order and as two field lines, with ErrBadSignature naming the header;
// and accepts the good one repeated.
func CheckEveryValueVerified(t *testing.T, verify func(h http.Header) error, header, good, forged string) {
	t.Helper()
	for _, values := range [][]string{{good, forged}, {forged, good}, {"", forged, good}} {
		h := http.Header{}
		for _, v := range values {
			h.Add(header, v)
		}
		err := verify(h)
		if !errors.Is(err, connectors.ErrBadSignature) || !strings.Contains(err.Error(), header) {
			t.Errorf("Verify with %s values %q = %v, want ErrBadSignature naming it", header, values, err)
		}
	}
	h := http.Header{}
	h.Add(header, good)
	h.Add(header, good)
	if err := verify(h); err != nil {
		t.Errorf("Verify with %s repeated = %v, want nil", header, err)
	}
}
