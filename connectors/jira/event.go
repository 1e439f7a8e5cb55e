package jira

// EventFromPayload returns the body's webhookEvent ("jira:issue_created").
// Jira sends no event header: a sender needs the name only to report it, and
// Parse reads it from the body itself. ok is false when the body has none.
func EventFromPayload(body []byte) (string, bool) {
	raw, err := decodeEnvelope(body)
	if err != nil || raw.WebhookEvent == "" {
		return "", false
	}
	return raw.WebhookEvent, true
}
