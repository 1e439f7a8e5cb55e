package linear

import "github.com/trackergateway/gateway/connectors"

// EventFromPayload returns the body's type ("Issue", "Comment"), which is
// what Linear sends in Linear-Event; ok is false when the body has none.
func EventFromPayload(body []byte) (string, bool) {
	var envelope struct {
		Type string `json:"type"`
	}
	if err := connectors.DecodeJSON(body, &envelope); err != nil || envelope.Type == "" {
		return "", false
	}
	return envelope.Type, true
}
