package events

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// TestPayloadIsEncodingJSON: the hand-written encoding of an event's data
// is byte for byte what encoding/json writes for it, whatever the text
// holds.
func TestPayloadIsEncodingJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
	archived := at.Add(time.Hour)
	texts := []string{"", "plain", `quote " backslash \ slash /`, "<b>&amp;</b>", "tab\tnew\nline\rret\bbs\fff",
		"\x00\x01\x1f\x7f", "é ü 漢字 🎉", "bad \xff utf-8 \xc3", "line\u2028para\u2029", "\u00a0\ufeff"}
	pr := store.Projection{Provider: "gitlab", Repository: "g/p", Number: 3, Title: "<MR> & more", State: "open", Draft: true}
	for i, text := range texts {
		task := store.Task{ID: "0190c7a2-0000-7000-8000-000000000001", WorkspaceID: "w" + text, Identifier: "W-1", Title: text,
			Description: text + text, WorkflowStepID: "step " + text, Labels: []string{text, "x"}, CreatedAt: at, UpdatedAt: at}
		if i%2 == 1 {
			task.ArchivedAt, task.ExternalID, task.Labels = &archived, "ext:"+text, nil
			task.Source = &store.Source{Provider: "github", Kind: "issue", Ref: text, URL: "https://example.com/" + text}
		}
		datas := []Data{
			{Task: TaskOf(task), Revision: int64(i + 1), Cause: Cause{Actor: text}},
			{Task: TaskOf(task), Revision: 7, Changes: Changes{{Field: "title", From: text, To: "x"}},
				Cause: Cause{Connection: text, DeliveryID: "d", ProviderEvent: text}},
			{Task: TaskOf(task), Revision: 8, Contribution: new(ContributionOf(pr, "merge_request")), Cause: Cause{Connection: "gl"}},
			{Task: Task{ID: text}, Revision: 0},
		}
		for _, d := range datas {
			got, err := d.Payload()
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("text %q: Payload =\n%s\nencoding/json =\n%s", text, got, want)
			}
		}
	}
	far := Data{Task: Task{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if _, err := far.Payload(); err == nil {
		t.Errorf("a year past 9999: nil error, want encoding/json's")
	}
}

// FuzzAppendString: any text is written as encoding/json writes it.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a<b>&c", "\x00\xff\u2028", `"\`, "é🎉"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}
