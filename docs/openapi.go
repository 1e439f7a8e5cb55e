// Package docs carries the gateway's OpenAPI document (openapi.yaml), so the
// binary serves the same bytes the tests validate responses against.
package docs

import (
	_ "embed"
	"net/http"
)

// OpenAPI is docs/openapi.yaml: the OpenAPI 3.1 description of every HTTP
// route the gateway serves.
//
//go:embed openapi.yaml
var OpenAPI []byte

// Handler serves OpenAPI as application/yaml. It needs no authentication:
// the document describes the API, it holds nothing about any deployment.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(OpenAPI)
	})
}
