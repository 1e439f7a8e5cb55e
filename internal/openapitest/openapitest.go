// Package openapitest checks real HTTP responses against the gateway's
// OpenAPI document (docs/openapi.yaml, as embedded in the binary), so the
// document and the server cannot drift apart unnoticed.
//
// It validates with github.com/getkin/kin-openapi, whose loader reads
// OpenAPI 3.1 and whose schema validation, with EnableJSONSchema2020,
// delegates to a JSON Schema 2020-12 validator: `type: [string, "null"]`,
// `const` and a `$ref` with siblings mean what 3.1 says they mean.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/trackergateway/gateway/docs"
)

// Spec is a loaded, validated OpenAPI document.
type Spec struct {
	doc *openapi3.T
}

// Load parses data and validates it as an OpenAPI document.
func Load(data []byte) (*Spec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load OpenAPI document: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("invalid OpenAPI document: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("OpenAPI document is version %s, want 3.1", doc.OpenAPI)
	}
	return &Spec{doc: doc}, nil
}

var (
	embeddedOnce sync.Once
	embedded     *Spec
	embeddedErr  error
)

// Embedded returns the document the gateway embeds (docs.OpenAPI), loaded
// once per test binary.
func Embedded() (*Spec, error) {
	embeddedOnce.Do(func() { embedded, embeddedErr = Load(docs.OpenAPI) })
	return embedded, embeddedErr
}

func mustEmbedded(t testing.TB) *Spec {
	t.Helper()
	s, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ValidateResponse reports a test error unless the embedded document
// documents status for the operation that serves method and path (a
// concrete path, matched against the path templates; a query string is
// ignored) and header and body satisfy that response.
func ValidateResponse(t testing.TB, method, path string, status int, header http.Header, body []byte) {
	t.Helper()
	mustEmbedded(t).ValidateResponse(t, method, path, status, header, body)
}

// ValidateSchema reports a test error unless body is a JSON value the
// embedded document's component schema name accepts.
func ValidateSchema(t testing.TB, name string, body []byte) {
	t.Helper()
	mustEmbedded(t).ValidateSchema(t, name, body)
}

// ValidateWebhook reports a test error unless body is a JSON value the
// embedded document's webhook name (its POST request body) accepts.
func ValidateWebhook(t testing.TB, name string, body []byte) {
	t.Helper()
	mustEmbedded(t).ValidateWebhook(t, name, body)
}

// Operations lists the embedded document's operations as "METHOD /path",
// sorted. It panics when the embedded document does not load, which
// TestEmbeddedDocumentLoads reports with the reason.
func Operations() []string {
	s, err := Embedded()
	if err != nil {
		panic(err)
	}
	return s.Operations()
}

// ValidateResponse is the package function for s.
func (s *Spec) ValidateResponse(t testing.TB, method, path string, status int, header http.Header, body []byte) {
	t.Helper()
	if err := s.CheckResponse(method, path, status, header, body); err != nil {
		t.Errorf("%s %s answered %d %s: %v", method, path, status, truncate(body), err)
	}
}

// ValidateSchema is the package function for s.
func (s *Spec) ValidateSchema(t testing.TB, name string, body []byte) {
	t.Helper()
	if err := s.CheckSchema(name, body); err != nil {
		t.Errorf("schema %s rejects %s: %v", name, truncate(body), err)
	}
}

// ValidateWebhook is the package function for s.
func (s *Spec) ValidateWebhook(t testing.TB, name string, body []byte) {
	t.Helper()
	if err := s.CheckWebhook(name, body); err != nil {
		t.Errorf("webhook %s rejects %s: %v", name, truncate(body), err)
	}
}

// Webhooks lists the names of the embedded document's webhooks, sorted.
func (s *Spec) Webhooks() []string {
	var out []string
	for name := range s.doc.Webhooks {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// CheckWebhook validates body, a JSON value, against the JSON request body
// of the POST of webhook name.
func (s *Spec) CheckWebhook(name string, body []byte) error {
	item := s.doc.Webhooks[name]
	if item == nil || item.Post == nil || item.Post.RequestBody == nil || item.Post.RequestBody.Value == nil {
		return fmt.Errorf("no webhook %q with a POST request body", name)
	}
	mt := item.Post.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return fmt.Errorf("webhook %q has no JSON request body schema", name)
	}
	return validateJSON(mt.Schema.Value, body)
}

// Operations is the package function for s.
func (s *Spec) Operations() []string {
	var out []string
	for path, item := range s.doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, method+" "+path)
		}
	}
	slices.Sort(out)
	return out
}

// Methods returns the methods the document gives the path template, sorted.
func (s *Spec) Methods(template string) []string {
	item := s.doc.Paths.Value(template)
	if item == nil {
		return nil
	}
	var out []string
	for method := range item.Operations() {
		out = append(out, method)
	}
	slices.Sort(out)
	return out
}

// CheckSchema validates body, a JSON value, against the component schema
// name.
func (s *Spec) CheckSchema(name string, body []byte) error {
	ref := s.doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("no component schema %q", name)
	}
	return validateJSON(ref.Value, body)
}

// CheckResponse returns why the response does not match the document, or
// nil when it does.
func (s *Spec) CheckResponse(method, path string, status int, header http.Header, body []byte) error {
	template, op := s.find(method, path)
	if op == nil {
		return fmt.Errorf("no operation %s documented for path %s", method, path)
	}
	ref := op.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		// No fallback to "default": every status the server answers must be
		// listed on its operation.
		return fmt.Errorf("status %d is not documented for %s %s", status, method, template)
	}
	resp := ref.Value
	for name, h := range resp.Headers {
		if err := checkHeader(name, h, header); err != nil {
			return err
		}
	}
	if len(resp.Content) == 0 {
		if len(bytes.TrimSpace(body)) != 0 {
			return fmt.Errorf("response %d of %s %s documents no body, got %d bytes", status, method, template, len(body))
		}
		return nil
	}
	mediaType, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil {
		return fmt.Errorf("Content-Type %q: %v", header.Get("Content-Type"), err)
	}
	mt := resp.Content.Get(mediaType)
	if mt == nil {
		return fmt.Errorf("Content-Type %s is not documented for %d of %s %s", mediaType, status, method, template)
	}
	if mt.Schema == nil || mt.Schema.Value == nil {
		return nil
	}
	if mediaType != "application/json" {
		return mt.Schema.Value.VisitJSON(string(body), validationOptions...)
	}
	return validateJSON(mt.Schema.Value, body)
}

func validateJSON(schema *openapi3.Schema, body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	if err := schema.VisitJSON(v, validationOptions...); err != nil {
		return fmt.Errorf("body does not match the schema: %w", err)
	}
	return nil
}

// validationOptions validate as OpenAPI 3.1 (JSON Schema 2020-12) and keep
// messages to the path and the reason: the default adds the whole schema
// and value, which buries the one line that matters in a test log.
var validationOptions = []openapi3.SchemaValidationOption{
	openapi3.EnableJSONSchema2020(),
	openapi3.SetSchemaErrorMessageCustomizer(func(err *openapi3.SchemaError) string {
		reason := err.Reason
		if err.Origin != nil {
			reason = err.Origin.Error()
		}
		if p := err.JSONPointer(); len(p) > 0 && !strings.HasPrefix(reason, "at '/") {
			return "at /" + strings.Join(p, "/") + ": " + reason
		}
		return reason
	}),
}

// checkHeader checks a documented response header: present when required,
// and its value accepted by its schema (an integer header is parsed first).
func checkHeader(name string, ref *openapi3.HeaderRef, header http.Header) error {
	if ref == nil || ref.Value == nil {
		return nil
	}
	h := ref.Value
	values := header.Values(name)
	if len(values) == 0 {
		if h.Required {
			return fmt.Errorf("required header %s is missing", name)
		}
		return nil
	}
	if h.Schema == nil || h.Schema.Value == nil {
		return nil
	}
	var v any = values[0]
	if h.Schema.Value.Type.Is("integer") {
		n, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return fmt.Errorf("header %s: %q is not an integer", name, values[0])
		}
		v = n
	}
	if err := h.Schema.Value.VisitJSON(v, validationOptions...); err != nil {
		return fmt.Errorf("header %s: %w", name, err)
	}
	return nil
}

// find returns the template and operation serving method and path. A
// template segment "{name}" matches any non-empty segment, as the router's
// variables do; when several templates match, the one with the most
// literal segments wins.
func (s *Spec) find(method, path string) (string, *openapi3.Operation) {
	path, _, _ = strings.Cut(path, "?")
	segs := strings.Split(path, "/")
	best, bestLiterals := "", -1
	for template := range s.doc.Paths.Map() {
		literals, ok := match(strings.Split(template, "/"), segs)
		if ok && literals > bestLiterals {
			best, bestLiterals = template, literals
		}
	}
	if best == "" {
		return "", nil
	}
	return best, s.doc.Paths.Value(best).GetOperation(strings.ToUpper(method))
}

func match(template, segs []string) (literals int, ok bool) {
	if len(template) != len(segs) {
		return 0, false
	}
	for i, t := range template {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if segs[i] == "" {
				return 0, false
			}
			continue
		}
		if t != segs[i] {
			return 0, false
		}
		literals++
	}
	return literals, true
}

func truncate(b []byte) string {
	const max = 512
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
