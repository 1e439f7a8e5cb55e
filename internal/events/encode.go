package events

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// The data of the events every creation and update writes is encoded by
// hand: encoding/json's reflection took three times as long for a task
// (BenchmarkCreatedPayload), and a creation builds it for every task
// created. The bytes are encoding/json's own (TestPayloadIsEncodingJSON):
// the same field order, the same escaping.

// Payload is the JSON of d, as the outbox row stores it.
func (d Data) Payload() (string, error) {
	// Room for the keys, ids and times, the text, and a little escaping:
	// a task's payload is written in one allocation, then copied once.
	t := d.Task
	size := 512 + len(t.Title) + len(t.Description) + len(t.ExternalID) + 16*len(t.Labels)
	if t.Source != nil {
		size += len(t.Source.Ref) + len(t.Source.URL)
	}
	b := make([]byte, 0, size+size/8)
	b = append(b, `{"task":`...)
	b, err := appendTask(b, t)
	if err != nil {
		return "", err
	}
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, d.Revision, 10)
	if len(d.Changes) > 0 {
		changes, err := d.Changes.MarshalJSON()
		if err != nil {
			return "", err
		}
		b = append(append(b, `,"changes":`...), changes...)
	}
	if d.Contribution != nil {
		c, err := json.Marshal(d.Contribution)
		if err != nil {
			return "", err
		}
		b = append(append(b, `,"contribution":`...), c...)
	}
	b = append(b, `,"cause":{`...)
	sep := ""
	for _, f := range [...]struct{ key, value string }{{`"connection":`, d.Cause.Connection},
		{`"delivery_id":`, d.Cause.DeliveryID}, {`"provider_event":`, d.Cause.ProviderEvent}, {`"actor":`, d.Cause.Actor},
		{`"trace_id":`, d.Cause.TraceID}, {`"span_id":`, d.Cause.SpanID}} {
		if f.value != "" {
			b = appendString(append(append(b, sep...), f.key...), f.value)
			sep = ","
		}
	}
	return string(append(b, "}}"...)), nil
}

// appendTask appends t's JSON, as encoding/json writes Task.
func appendTask(b []byte, t Task) ([]byte, error) {
	b = appendString(append(b, `{"id":`...), t.ID)
	b = appendString(append(b, `,"workspace_id":`...), t.WorkspaceID)
	b = appendString(append(b, `,"identifier":`...), t.Identifier)
	b = appendString(append(b, `,"title":`...), t.Title)
	b = appendString(append(b, `,"description":`...), t.Description)
	b = appendString(append(b, `,"workflow_step_id":`...), t.WorkflowStepID)
	b = append(b, `,"labels":`...)
	if t.Labels == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, l := range t.Labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, l)
		}
		b = append(b, ']')
	}
	b = append(b, `,"archived_at":`...)
	var err error
	if t.ArchivedAt == nil {
		b = append(b, "null"...)
	} else if b, err = appendTime(b, *t.ArchivedAt); err != nil {
		return nil, err
	}
	if b, err = appendTime(append(b, `,"created_at":`...), t.CreatedAt); err != nil {
		return nil, err
	}
	if b, err = appendTime(append(b, `,"updated_at":`...), t.UpdatedAt); err != nil {
		return nil, err
	}
	if t.ExternalID != "" {
		b = appendString(append(b, `,"external_id":`...), t.ExternalID)
	}
	if s := t.Source; s != nil {
		b = appendString(append(b, `,"source":{"provider":`...), s.Provider)
		b = appendString(append(b, `,"kind":`...), s.Kind)
		b = appendString(append(b, `,"ref":`...), s.Ref)
		b = appendString(append(b, `,"url":`...), s.URL)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendTime appends t as time.Time's MarshalJSON does (it refuses the
// years RFC 3339 cannot write).
func appendTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		_, err := t.MarshalJSON()
		return nil, err
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string exactly as encoding/json does:
// <, > and & escaped (its HTML-safe default), control characters as \b,
// \f, \n, \r, \t or \u00XX, invalid UTF-8 as \ufffd, and U+2028 and
// U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
