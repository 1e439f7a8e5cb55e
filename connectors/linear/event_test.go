package linear

import "testing"

func TestEventFromPayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, body string // body when file is empty
		want       string
		wantOK     bool
	}{
		{file: "issue.create.json", want: "Issue", wantOK: true},
		{file: "issue.remove.json", want: "Issue", wantOK: true},
		{file: "comment.create.json", want: "Comment", wantOK: true},
		{body: `{"type":"Project","action":"update"}`, want: "Project", wantOK: true},
		{body: `{"action":"update"}`},
		{body: `{"type":""}`},
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
