package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

func TestCanonicalIsRFC8785(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"keys sorted, no whitespace", map[string]any{"b": 1, "a": "x", "c": []int{2, 1}}, `{"a":"x","b":1,"c":[2,1]}`},
		{"numbers in shortest form", map[string]any{"n": 1.0, "f": 0.5, "big": 1e21}, `{"big":1e+21,"f":0.5,"n":1}`},
		{"non-ASCII kept as UTF-8", map[string]string{"t": "é日"}, `{"t":"é日"}`},
		{"HTML characters not escaped", map[string]string{"t": "<a&b>"}, `{"t":"<a&b>"}`},
		{"null kept", map[string]any{"p": nil}, `{"p":null}`},
		{"nested objects sorted", map[string]any{"z": map[string]int{"y": 1, "x": 2}}, `{"z":{"x":2,"y":1}}`},
		// RFC 8785 section 3.2.3: keys sort by UTF-16 code units, so the
		// emoji (a surrogate pair) sorts before U+FB33 though its UTF-8
		// bytes are greater.
		{"keys sorted by UTF-16 code units", map[string]string{"\u20ac": "Euro Sign", "\r": "Carriage Return",
			"\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\U0001F600": "Emoji: Grinning Face",
			"\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"},
			`{"\r":"Carriage Return","1":"One","` + "\u0080" + `":"Control","ö":"Latin Small Letter O With Diaeresis",` +
				`"€":"Euro Sign","😀":"Emoji: Grinning Face","דּ":"Hebrew Letter Dalet With Dagesh"}`},
		// RFC 8785 section 3.2.2.2: U+0000 to U+001F as \u00XX except the
		// short escapes; everything else, U+0080 and U+2028 included, as
		// itself.
		{"string escapes", map[string]string{"s": "€$\u000f\nA'B\"\\/\u2028"}, "{\"s\":\"€$\\u000f\\nA'B\\\"\\\\/\u2028\"}"},
		// RFC 8785 appendix B: ECMAScript number serialization.
		{"numbers as ECMAScript writes them", []float64{333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001, -0.0, 1e-7},
			`[333333333.3333333,1e+30,4.5,0.002,1e-27,0,1e-7]`},
	}
	for _, tc := range tests {
		got, err := Canonical(tc.in)
		if err != nil {
			t.Fatalf("%s: Canonical error = %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s: Canonical = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestDomainSeparatedHashes(t *testing.T) {
	t.Parallel()
	data := []byte(`{"version":1}`)
	want := func(domain string) string {
		sum := sha256.Sum256(append(append([]byte(domain), 0), data...))
		return hex.EncodeToString(sum[:])
	}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"manifest", ManifestHash(data), want("kandev/task-creation-plan/v1")},
		{"actor binding", ActorBindingHash(data), want("kandev/task-creation-actor/v1")},
		{"step request", RequestHash(data), want("kandev/task-creation-step-request/v1")},
	}
	seen := map[string]string{sha256Hex(data): "undomained sha256"}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s hash = %s, want %s", tc.name, tc.got, tc.want)
		}
		if len(tc.got) != 64 {
			t.Errorf("%s hash has %d hex digits, want 64", tc.name, len(tc.got))
		}
		if other, dup := seen[tc.got]; dup {
			t.Errorf("%s hash equals the %s hash of the same bytes", tc.name, other)
		}
		seen[tc.got] = tc.name
	}
}

func TestIdempotencyKeyAndMarker(t *testing.T) {
	t.Parallel()
	base := IdempotencyKey("op", "kind", "key", "req")
	if again := IdempotencyKey("op", "kind", "key", "req"); again != base {
		t.Errorf("IdempotencyKey is not deterministic: %s then %s", base, again)
	}
	variants := map[string]string{
		"operation":             IdempotencyKey("op2", "kind", "key", "req"),
		"kind":                  IdempotencyKey("op", "kind2", "key", "req"),
		"step key":              IdempotencyKey("op", "kind", "key2", "req"),
		"request hash":          IdempotencyKey("op", "kind", "key", "req2"),
		"shifted part boundary": IdempotencyKey("o", "pkind", "key", "req"),
	}
	for name, v := range variants {
		if v == base {
			t.Errorf("IdempotencyKey ignores the %s", name)
		}
	}
	m := OwnershipMarker("op", "kind", "key", "tokenhash")
	if OwnershipMarker("op", "kind", "key", "tokenhash") != m {
		t.Errorf("OwnershipMarker is not deterministic")
	}
	if OwnershipMarker("op", "kind", "key", "othertoken") == m {
		t.Errorf("OwnershipMarker ignores the completion-token hash")
	}
	if OwnershipMarker("op", "kind", "key2", "tokenhash") == m {
		t.Errorf("OwnershipMarker ignores the step key")
	}
}

func planFixture(req CreateRequest) (CreationPlan, []store.CreationStep, error) {
	task := store.Task{ID: "6f1c0f8e-3c1a-4f7e-9a53-1d2b3c4d5e6f", WorkspaceID: req.WorkspaceID, Identifier: "WS-1",
		Title: req.Title, WorkflowStepID: req.WorkflowStepID, Labels: req.Labels, ExternalID: req.ExternalID}
	if task.Labels == nil {
		task.Labels = []string{}
	}
	return buildPlan("0d6c8f3a-1b2c-4d5e-8f90-a1b2c3d4e5f6", task, "tokenhash", req,
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

func manifestOf(t *testing.T, req CreateRequest) (string, string) {
	t.Helper()
	plan, _, err := planFixture(req)
	if err != nil {
		t.Fatalf("buildPlan: %v", err)
	}
	raw, err := Canonical(plan)
	if err != nil {
		t.Fatalf("Canonical(plan): %v", err)
	}
	return string(raw), ManifestHash(raw)
}

func TestPlanHashingIsCanonicalAndStable(t *testing.T) {
	t.Parallel()
	req := createRequest("ext-1", contribution("101"), contribution("202"))
	raw1, hash1 := manifestOf(t, req)
	raw2, hash2 := manifestOf(t, req)
	if raw1 != raw2 || hash1 != hash2 {
		t.Fatalf("the same plan hashed twice differs:\n%s\n%s", raw1, raw2)
	}
	reordered := createRequest("ext-1", contribution("202"), contribution("101"))
	if _, h := manifestOf(t, reordered); h != hash1 {
		t.Errorf("manifest depends on contribution order: %s vs %s", h, hash1)
	}
	// The stored plan must be its own canonical form and decode strictly.
	var plan CreationPlan
	if err := decodeStrict([]byte(raw1), &plan); err != nil {
		t.Fatalf("stored plan does not decode strictly: %v", err)
	}
	if again, _ := Canonical(plan); string(again) != raw1 {
		t.Errorf("plan does not round-trip canonically:\n%s\n%s", again, raw1)
	}
	if plan.Steps[0].StepKey != "github:gh-main:pull_request:101" || plan.Steps[1].StepKey != "github:gh-main:pull_request:202" {
		t.Errorf("plan steps = %s, %s; want sorted canonical step keys", plan.Steps[0].StepKey, plan.Steps[1].StepKey)
	}
	var stepReq RemoteContributionRequest
	if err := decodeStrict(plan.Steps[0].Request, &stepReq); err != nil {
		t.Fatalf("step request does not decode strictly: %v", err)
	}
	if stepReq.TaskID == "" || stepReq.WorkspaceID != testWS {
		t.Errorf("step request = %+v, want the task and workspace bound in", stepReq)
	}

	changes := map[string]func(r *CreateRequest){
		"title":            func(r *CreateRequest) { r.Title = "other" },
		"external id":      func(r *CreateRequest) { r.ExternalID = "ext-2" },
		"workflow step":    func(r *CreateRequest) { r.WorkflowStepID = "doing" },
		"labels":           func(r *CreateRequest) { r.Labels = []string{"bug"} },
		"contribution":     func(r *CreateRequest) { r.Contributions = []RemoteContributionRequest{contribution("101")} },
		"repository":       func(r *CreateRequest) { r.Contributions[0].RepositoryID = "acme/other" },
		"no contributions": func(r *CreateRequest) { r.Contributions = nil },
	}
	for name, change := range changes {
		r := createRequest("ext-1", contribution("101"), contribution("202"))
		change(&r)
		if _, h := manifestOf(t, r); h == hash1 {
			t.Errorf("changing the %s does not change the manifest hash", name)
		}
	}
}

func TestPlanStepRowsBindTheirRequest(t *testing.T) {
	t.Parallel()
	plan, steps, err := planFixture(createRequest("ext-1", contribution("101")))
	if err != nil {
		t.Fatalf("buildPlan: %v", err)
	}
	if len(steps) != 1 {
		t.Fatalf("steps = %d, want 1", len(steps))
	}
	s := steps[0]
	if s.RequestJSON != string(plan.Steps[0].Request) {
		t.Errorf("step request_json = %s, want the plan's %s", s.RequestJSON, plan.Steps[0].Request)
	}
	if want := RequestHash([]byte(s.RequestJSON)); s.RequestSHA256 != want {
		t.Errorf("step request_sha256 = %s, want %s", s.RequestSHA256, want)
	}
	if want := IdempotencyKey(s.OperationID, s.Kind, s.StepKey, s.RequestSHA256); s.IdempotencyKey != want {
		t.Errorf("step idempotency key = %s, want %s", s.IdempotencyKey, want)
	}
	if want := OwnershipMarker(s.OperationID, s.Kind, s.StepKey, "tokenhash"); s.OwnershipMarker != want {
		t.Errorf("step ownership marker = %s, want %s", s.OwnershipMarker, want)
	}
	if s.State != store.StepPlanned || s.Compensation != store.CompensationNone {
		t.Errorf("new step = %s/%s, want %s/%s", s.State, s.Compensation, store.StepPlanned, store.CompensationNone)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(s.RequestJSON), &raw); err != nil {
		t.Fatalf("decode request: %v", err)
	}
	for _, field := range []string{"provider", "workspace_id", "repository_id", "contribution_kind", "contribution_id", "connection_id", "task_id"} {
		if _, ok := raw[field]; !ok {
			t.Errorf("step request lacks %q: %s", field, s.RequestJSON)
		}
	}
	if len(raw) != 7 {
		t.Errorf("step request has %d fields, want exactly 7: %s", len(raw), s.RequestJSON)
	}
}

func TestPlanRefusesDuplicateAndUnsupportedSteps(t *testing.T) {
	t.Parallel()
	if _, _, err := planFixture(createRequest("", contribution("101"), contribution("101"))); err == nil {
		t.Errorf("buildPlan with a duplicate step = nil error, want refusal")
	}
	bad := map[string]RemoteContributionRequest{
		"provider":   {Provider: "bitbucket", ContributionKind: "pull_request", ConnectionID: "c", ContributionID: "1"},
		"kind":       {Provider: "github", ContributionKind: "issue", ConnectionID: "c", ContributionID: "1"},
		"connection": {Provider: "github", ContributionKind: "pull_request", ContributionID: "1"},
	}
	c := New(nil, discardLogger(), time.Now, testContributionKinds)
	for name, cr := range bad {
		if err := c.validateContribution(cr); err == nil {
			t.Errorf("validateContribution with a bad %s = nil, want error", name)
		}
	}
	if err := PlanStepKinds([]string{StepRemoteContributionAssociate}); err != nil {
		t.Errorf("PlanStepKinds(remote_contribution_associate) = %v, want nil", err)
	}
	for _, k := range []string{StepWorkspaceAttachment, StepAttachmentClaim, StepFreshBranchPrepare, StepSessionPrepare, StepLaunchIntent} {
		if err := PlanStepKinds([]string{k}); !errors.Is(err, ErrUnsupportedStep) {
			t.Errorf("PlanStepKinds(%s) = %v, want ErrUnsupportedStep", k, err)
		}
	}
	if err := PlanStepKinds([]string{"teleport"}); err == nil || errors.Is(err, ErrUnsupportedStep) {
		t.Errorf("PlanStepKinds(unknown kind) = %v, want an unknown-kind error", err)
	}
}

// BenchmarkCanonical canonicalizes a creation request like the one a new
// GitHub issue makes (its body as the description).
func BenchmarkCanonical(b *testing.B) {
	req := map[string]any{"workspace_id": "bench", "external_id": "github:github.com:issue:100000000001",
		"title": "Spelling error in the README file", "workflow_step_id": "backlog", "labels": []string{"bug"},
		"description": strings.Repeat("It looks like you accidently spelled 'commit' with two 't's. ", 40)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonical(req); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRememberedPlanIsTheParsedPlan: Begin puts the plan it built in the
// memo under its canonical JSON instead of parsing that JSON back; what it
// puts there must be what the parse would have found.
func TestRememberedPlanIsTheParsedPlan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  CreateRequest
	}{
		{"no steps", createRequest("ext-1")},
		{"two steps", createRequest("ext-1", contribution("202"), contribution("101"))},
		{"labels and description", func() CreateRequest {
			r := createRequest("ext-2")
			r.Labels, r.Description = []string{"bug", "ui"}, "a <b> & \"c\"\n\u2028"
			return r
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			built, _, err := planFixture(tt.req)
			if err != nil {
				t.Fatalf("buildPlan: %v", err)
			}
			raw, err := Canonical(built)
			if err != nil {
				t.Fatalf("Canonical: %v", err)
			}
			parsed, err := decodeCanonicalPlan(string(raw))
			if err != nil {
				t.Fatalf("decodeCanonicalPlan: %v", err)
			}
			if !reflect.DeepEqual(parsed, built) {
				t.Errorf("the parsed plan differs from the built one:\nparsed %#v\nbuilt  %#v", parsed, built)
			}
		})
	}
}
