package main

// SIGTERM while a webhook is still uploading: the upload is acknowledged,
// the process exits 0, and the delivery is processed.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stalledUpload is a webhook request whose body is only partly sent.
type stalledUpload struct {
	conn net.Conn
	r    *bufio.Reader
	rest []byte
}

// startUpload connects to the gateway and sends h's signed headers and the
// first half of its body. It returns once the handler is reading the body:
// the headers ask for "100 Continue", which the server sends on the
// handler's first read. (A connection the server has not accepted yet
// would be reset when the listener closes.)
func startUpload(t *testing.T, g *gateway, h hook) *stalledUpload {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatalf("dial gateway: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST /webhooks/%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n",
		h.Conn, strings.TrimPrefix(g.URL, "http://"), len(h.Body))
	if err := h.header(secretsByConn[h.Conn]).Write(&req); err != nil {
		t.Fatal(err)
	}
	req.WriteString("\r\n")
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatalf("send the headers: %v", err)
	}
	u := &stalledUpload{conn: conn, r: bufio.NewReader(conn)}
	_ = conn.SetReadDeadline(time.Now().Add(waitTimeout))
	resp, err := http.ReadResponse(u.r, nil)
	if err != nil {
		t.Fatalf("read the interim answer: %v", err)
	}
	if resp.StatusCode != http.StatusContinue {
		t.Fatalf("interim answer = %d, want 100 Continue", resp.StatusCode)
	}
	half := len(h.Body) / 2
	if _, err := conn.Write(h.Body[:half]); err != nil {
		t.Fatalf("send half the body: %v", err)
	}
	u.rest = h.Body[half:]
	return u
}

// finish sends the rest of the body and reads the answer.
func (u *stalledUpload) finish(t *testing.T) (int, []byte) {
	t.Helper()
	if _, err := u.conn.Write(u.rest); err != nil {
		t.Fatalf("send the rest of the body: %v", err)
	}
	_ = u.conn.SetReadDeadline(time.Now().Add(waitTimeout))
	resp, err := http.ReadResponse(u.r, nil)
	if err != nil {
		t.Fatalf("read the answer to the upload: %v", err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	return resp.StatusCode, body.Bytes()
}

// waitLog polls p's log file until it contains s.
func (p *process) waitLog(t *testing.T, s string) {
	t.Helper()
	poll(t, fmt.Sprintf("%s to log %q", p.name, s), waitTimeout, func() bool {
		b, err := os.ReadFile(p.logs)
		return err == nil && bytes.Contains(b, []byte(s))
	})
}

// waitRefused polls until a new connection to p is refused: the listener
// is closed.
func (p *process) waitRefused(t *testing.T) {
	t.Helper()
	poll(t, p.name+" to refuse new connections", waitTimeout, func() bool {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(p.URL, "http://"), time.Second)
		if err != nil {
			return true
		}
		_ = c.Close()
		return false
	})
}

// waitExit waits for p to exit and returns how.
func (p *process) waitExit(t *testing.T) *os.ProcessState {
	t.Helper()
	select {
	case <-p.exited:
		return p.state
	case <-time.After(waitTimeout):
		t.Fatalf("%s did not exit within %s", p.name, waitTimeout)
		return nil
	}
}

// TestShutdownFinishesUploads sends SIGTERM while a signed webhook is half
// uploaded: the gateway stops accepting connections but the upload, once
// complete, is committed and answered 202, the process exits 0, and after
// a restart on the same database the delivery is processed into its task.
func TestShutdownFinishesUploads(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		dbURL := newDatabaseURL(t, dialect)
		cfg := writeConfig(t)
		const issueID = 7_100_001
		h := hook{Conn: "github", Event: "issues", Key: "shutdown-upload-1",
			Body: githubIssueOpened(t, issueID, 4242, "Uploaded during shutdown")}

		first := startProcess(t, dbURL, cfg, "gateway-1")
		upload := startUpload(t, first.gateway, h)
		if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("SIGTERM: %v", err)
		}
		// The stop has begun before the upload resumes.
		first.waitLog(t, `"msg":"gateway stopping"`)
		first.waitRefused(t)

		status, body := upload.finish(t)
		if status != http.StatusAccepted {
			t.Fatalf("upload in flight at SIGTERM = %d %s, want 202", status, body)
		}
		var r receipt
		if err := json.Unmarshal(body, &r); err != nil || r.DeliveryID == "" || r.Status != "accepted" {
			t.Fatalf("receipt = %s (%v), want a delivery_id and status accepted", body, err)
		}
		if st := first.waitExit(t); !st.Success() {
			t.Fatalf("gateway exited with %v after SIGTERM, want exit status 0", st)
		}

		second := startProcess(t, dbURL, cfg, "gateway-2")
		d := second.waitDelivery(t, r.DeliveryID)
		if d.Status != "succeeded" {
			t.Fatalf("delivery %s: status %q last_error %q, want succeeded", r.DeliveryID, d.Status, str(d.LastError))
		}
		checkOneTaskEach(t, second.gateway, []string{fmt.Sprintf("github:github.com:issue:%d", issueID)})
	})
}

// TestShutdownSecondSignal: a second SIGTERM during a graceful stop ends
// the process at once, without waiting for the upload in flight.
func TestShutdownSecondSignal(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := startProcess(t, newDatabaseURL(t, dialect), writeConfig(t), "gateway")
		h := hook{Conn: "github", Event: "issues", Key: "shutdown-upload-2",
			Body: githubIssueOpened(t, 7_100_002, 4243, "Never finished")}
		startUpload(t, p.gateway, h) // never finished: the stop waits for it
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("SIGTERM: %v", err)
		}
		p.waitLog(t, `"msg":"gateway stopping"`)
		// The default action is restored just after the stop begins: signal
		// until it takes effect.
		poll(t, "a second SIGTERM to end the process", waitTimeout, func() bool {
			select {
			case <-p.exited:
				return true
			default:
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
				return false
			}
		})
		if ws, ok := p.state.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Fatalf("gateway ended with %v, want killed by the second SIGTERM", p.state)
		}
	})
}

// TestShutdownTimeout: an upload that never completes holds the stop only
// until --shutdown-timeout; then its connection is closed without an
// answer (the provider retries) and the process still exits 0.
func TestShutdownTimeout(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		p := startProcess(t, newDatabaseURL(t, dialect), writeConfig(t), "gateway", "--shutdown-timeout", "1s")
		h := hook{Conn: "github", Event: "issues", Key: "shutdown-upload-3",
			Body: githubIssueOpened(t, 7_100_003, 4244, "Never finished either")}
		upload := startUpload(t, p.gateway, h)
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("SIGTERM: %v", err)
		}
		// Far below the server's own 60 s read timeout, which would otherwise
		// end the stalled upload and the stop with it.
		const exitWithin = 20 * time.Second
		select {
		case <-p.exited:
		case <-time.After(exitWithin):
			t.Fatalf("gateway still running %s after SIGTERM with --shutdown-timeout 1s", exitWithin)
		}
		if !p.state.Success() {
			t.Errorf("gateway exited with %v, want exit status 0", p.state)
		}
		p.waitLog(t, `"msg":"shutdown timeout expired`)
		if resp, err := http.ReadResponse(upload.r, nil); err == nil {
			t.Errorf("the unfinished upload was answered %d, want its connection closed without an answer", resp.StatusCode)
		}
	})
}
