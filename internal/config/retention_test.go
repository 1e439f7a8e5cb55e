package config

import (
	"strings"
	"testing"
	"time"
)

func TestRetention(t *testing.T) {
	t.Parallel()
	vars := env(map[string]string{"GH_SECRET": "s3cret", "GH_SECRET_OLD": "", "BOT_TOKEN": "0123456789abcdef"})
	defaults := RetentionPolicy{Processed: 168 * time.Hour, Failed: 720 * time.Hour, Events: 168 * time.Hour, Interval: 10 * time.Minute}
	tests := []struct {
		name    string
		block   string // appended to the valid file
		want    RetentionPolicy
		wantErr string
	}{
		{"absent: the defaults", "", defaults, ""},
		{"empty block: the defaults", "retention: {}\n", defaults, ""},
		{"every key", "retention:\n  processed: 24h\n  failed: 48h30m\n  events: 1h\n  interval: 30s\n",
			RetentionPolicy{Processed: 24 * time.Hour, Failed: 48*time.Hour + 30*time.Minute, Events: time.Hour, Interval: 30 * time.Second}, ""},
		{"0 keeps", "retention:\n  processed: 0\n  failed: 0s\n  events: 0\n",
			RetentionPolicy{Interval: 10 * time.Minute}, ""},
		{"one key, the others default", "retention:\n  failed: 2160h\n",
			RetentionPolicy{Processed: 168 * time.Hour, Failed: 2160 * time.Hour, Events: 168 * time.Hour, Interval: 10 * time.Minute}, ""},
		{"not a duration", "retention:\n  processed: 7d\n", RetentionPolicy{}, `line 18: retention.processed: "7d" is not a duration`},
		{"a number without a unit", "retention:\n  events: 168\n", RetentionPolicy{}, `retention.events: "168" is not a duration`},
		{"negative", "retention:\n  failed: -1h\n", RetentionPolicy{}, `retention.failed: "-1h" must be positive, or 0 to keep forever`},
		{"interval 0", "retention:\n  interval: 0s\n", RetentionPolicy{}, `retention.interval: "0s" must be positive`},
		{"empty value", "retention:\n  interval:\n", RetentionPolicy{}, `retention.interval: must be a duration`},
		{"unknown key", "retention:\n  deliveries: 1h\n", RetentionPolicy{}, `line 18: unknown key deliveries in retention; the keys there are processed, failed, events, interval`},
		{"not a mapping", "retention: 1h\n", RetentionPolicy{}, `retention: must be a mapping`},
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
			got, err := c.Retention.Policy()
			if err != nil || got != tc.want {
				t.Errorf("Policy() = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	// Zero-config has the defaults too.
	if got, err := (Retention{}).Policy(); err != nil || got != defaults {
		t.Errorf("zero Retention policy = %+v, %v; want the defaults", got, err)
	}
}
