package store

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// DecodeDeliveryHeaders turns a delivery's stored headers (Delivery.Headers:
// a JSON object of canonical name → values, as http.Header marshals, which
// the receiver writes with the secret headers removed) back into an
// http.Header, for the adapter's Parse and for operators.
func DecodeDeliveryHeaders(raw string) (http.Header, error) {
	h := http.Header{}
	if raw == "" {
		return h, nil
	}
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		return nil, fmt.Errorf("decode headers: %w", err)
	}
	return h, nil
}
