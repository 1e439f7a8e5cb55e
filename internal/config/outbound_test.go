package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOutbound(t *testing.T) {
	t.Parallel()
	vars := env(map[string]string{"GH_SECRET": "s3cret", "GH_SECRET_OLD": "", "BOT_TOKEN": "0123456789abcdef"})
	defaults := OutboundPolicy{RetrySchedule: DefaultRetrySchedule, DisableAfter: 120 * time.Hour}
	tests := []struct {
		name    string
		block   string // appended to the valid file
		want    OutboundPolicy
		wantErr string
	}{
		{"absent: the defaults", "", defaults, ""},
		{"empty block: the defaults", "outbound: {}\n", defaults, ""},
		{"every key", "outbound:\n  allow_http: true\n  allow_private: true\n  retry_schedule: [1s, 2m]\n  disable_after: 1h\n",
			OutboundPolicy{AllowHTTP: true, AllowPrivate: true, RetrySchedule: []time.Duration{time.Second, 2 * time.Minute}, DisableAfter: time.Hour}, ""},
		{"never disable", "outbound:\n  disable_after: 0s\n", OutboundPolicy{RetrySchedule: DefaultRetrySchedule}, ""},
		{"a retry that is not a duration", "outbound:\n  retry_schedule: [5s, 1d]\n", OutboundPolicy{}, `line 18: outbound.retry_schedule[1]: "1d" is not a duration`},
		{"a retry of zero", "outbound:\n  retry_schedule:\n    - 0s\n", OutboundPolicy{}, `outbound.retry_schedule[0]: "0s" must be positive`},
		{"an empty schedule", "outbound:\n  retry_schedule: []\n", OutboundPolicy{}, `outbound.retry_schedule: must be a list of durations`},
		{"a schedule that is not a list", "outbound:\n  retry_schedule: 5s\n", OutboundPolicy{}, `outbound.retry_schedule: must be a list`},
		{"not a boolean", "outbound:\n  allow_http: sometimes\n", OutboundPolicy{}, `line 18: outbound.allow_http: must be true or false`},
		{"negative disable_after", "outbound:\n  disable_after: -1h\n", OutboundPolicy{}, `outbound.disable_after: "-1h" must be positive, or 0 to never disable`},
		{"unknown key", "outbound:\n  timeout: 5s\n", OutboundPolicy{}, `unknown key timeout in outbound`},
		{"not a mapping", "outbound: true\n", OutboundPolicy{}, `outbound: must be a mapping`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte(valid+tc.block), vars)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := c.Outbound.Policy()
			if err != nil || got.AllowHTTP != tc.want.AllowHTTP || got.AllowPrivate != tc.want.AllowPrivate ||
				!slices.Equal(got.RetrySchedule, tc.want.RetrySchedule) || got.DisableAfter != tc.want.DisableAfter {
				t.Errorf("Policy() = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
