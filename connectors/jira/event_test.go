package jira

import (
	"testing"
)

func TestEventFromPayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, body string // body when file is empty
		want       string
		wantOK     bool
	}{
		{file: "webhook-issue-created.json", want: EventIssueCreated, wantOK: true},
		{file: "webhook-issue-updated-labels.json", want: EventIssueUpdated, wantOK: true},
		{file: "webhook-issue-deleted.json", want: EventIssueDeleted, wantOK: true},
		{body: `{"webhookEvent":"comment_created","timestamp":1}`, want: "comment_created", wantOK: true},
		{body: `{"timestamp":1}`},
		{body: `not json`},
	}
	for _, tt := range tests {
		body := []byte(tt.body)
		if tt.file != "" {
			body = fixture(t, tt.file)
		}
		got, ok := EventFromPayload(body)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("EventFromPayload(%s%s) = %q, %v; want %q, %v", tt.file, tt.body, got, ok, tt.want, tt.wantOK)
		}
	}
}
