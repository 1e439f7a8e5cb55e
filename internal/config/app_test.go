package config

import "testing"

func TestConnectionAppKeys(t *testing.T) {
	t.Parallel()
	const head = `workspaces:
  - id: eng
connections:
  - id: conn
    workspace: eng
    secrets: ["s3cret"]
`
	tests := []struct {
		name, text string
		wantApp    *App
		wantErr    []string // substrings of the error; nil when it loads
	}{
		{name: "key file", text: head + "    provider: github\n    app: {id: 42, private_key_file: /etc/gateway/app.pem}\n",
			wantApp: &App{ID: 42, PrivateKeyFile: "/etc/gateway/app.pem"}},
		{name: "inline key", text: head + "    provider: github\n    app: {id: 42, private_key: \"${KEY}\"}\n    recover_every: 10m\n",
			wantApp: &App{ID: 42, PrivateKey: "-----BEGIN RSA PRIVATE KEY----- abc -----END RSA PRIVATE KEY-----"}},
		{name: "no app", text: head + "    provider: github\n"},
		{name: "gitlab app", text: head + "    provider: gitlab\n    app: {id: 42, private_key_file: k.pem}\n",
			wantErr: []string{"line 8:", "only github connections"}},
		{name: "no id", text: head + "    provider: github\n    app: {private_key_file: k.pem}\n", wantErr: []string{"line 8:", "positive numeric ID"}},
		{name: "no key", text: head + "    provider: github\n    app: {id: 42}\n", wantErr: []string{"exactly one of private_key_file and private_key"}},
		{name: "two keys", text: head + "    provider: github\n    app: {id: 42, private_key_file: k.pem, private_key: x}\n",
			wantErr: []string{"exactly one of"}},
		{name: "app and api_token", text: head + "    provider: github\n    api_token: t\n    app: {id: 42, private_key_file: k.pem}\n",
			wantErr: []string{"line 8:", "installation tokens"}},
		{name: "app and hooks", text: head + "    provider: github\n    hooks: [{repository: a/b, id: 1}]\n    app: {id: 42, private_key_file: k.pem}\n",
			wantErr: []string{"line 8:", "the App's own hook"}},
		{name: "unknown app key", text: head + "    provider: github\n    app: {id: 42, private_key_file: k.pem, secret: x}\n",
			wantErr: []string{"line 8:", "unknown key secret in connections[0] (conn).app; the keys there are id, private_key_file, private_key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cn, ok := parseConnection(t, tc.text, map[string]string{"KEY": "-----BEGIN RSA PRIVATE KEY----- abc -----END RSA PRIVATE KEY-----"}, tc.wantErr)
			if !ok {
				return
			}
			switch {
			case (cn.App == nil) != (tc.wantApp == nil):
				t.Fatalf("app = %+v, want %+v", cn.App, tc.wantApp)
			case cn.App != nil && *cn.App != *tc.wantApp:
				t.Errorf("app = %+v, want %+v", *cn.App, *tc.wantApp)
			}
			if got, want := cn.HasAPIAccess(), tc.wantApp != nil; got != want {
				t.Errorf("HasAPIAccess = %t, want %t", got, want)
			}
		})
	}
}
