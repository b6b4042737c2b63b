package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/secure/securetest"
	"github.com/vstream-cdc/vstream/internal/testkit"
	"github.com/vstream-cdc/vstream/internal/testserver"
	"github.com/vstream-cdc/vstream/server"
)

// TestSecureServer: vstream against a vstreamd that wants TLS, a client certificate and a
// token. With all three, from flags or from the environment and with the token in a file,
// it streams; a wrong token, a CA that did not sign the server's certificate, a wrong server
// name and a missing client certificate each end it at once with exit status 1 and a message
// naming vstreamd and what was refused, never the token.
func TestSecureServer(t *testing.T) {
	certs := securetest.New(t)
	const token = "vstream-cli-token-Wq4"
	pem, err := os.ReadFile(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	addr := testserver.ServeWith(t, db, "test", server.Options{AuthToken: token, TLS: &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}})
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.MustExec(t, db, "CREATE TABLE IF NOT EXISTS secure_t (id INT PRIMARY KEY, v VARCHAR(40))",
		"REPLACE INTO secure_t VALUES (1, 'secure-marker-7Yp')")
	stream := []string{"--server", addr, "--tables", "secure_t", "--position", "copy", "--output", "json"}
	mtls := []string{"--tls-ca", certs.CA, "--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey}

	t.Run("flags and token file", func(t *testing.T) {
		streamUntil(t, "secure-marker-7Yp", append(append(stream, mtls...), "--token-file", tokFile)...)
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("VSTREAM_TLS_CA", certs.CA)
		t.Setenv("VSTREAM_TLS_CERT", certs.ClientCert)
		t.Setenv("VSTREAM_TLS_KEY", certs.ClientKey)
		t.Setenv("VSTREAM_TOKEN", token)
		streamUntil(t, "secure-marker-7Yp", stream...)
	})
	for _, tc := range []struct {
		name  string
		args  []string
		token string
		want  string
	}{
		{"wrong token", mtls, "bad-" + token, "Unauthenticated"},
		{"unknown CA", []string{"--tls-ca", certs.OtherCA, "--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey}, token,
			"TLS handshake refused by " + addr + ": tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{"wrong name", append([]string{"--tls-server-name", "wrong.example"}, mtls...), token, "not wrong.example"},
		{"no client certificate", []string{"--tls-ca", certs.CA}, token, "TLS handshake refused by " + addr + ": remote error: tls: certificate required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("VSTREAM_TOKEN", tc.token)
			var stdout, stderr bytes.Buffer
			start := time.Now()
			// The timeout only bounds a failing test: a refusal must end the run at once.
			code := run(context.Background(), append(append(append([]string(nil), stream...), tc.args...), "--timeout", "60s"), &stdout, &stderr)
			out := stderr.String()
			if code != 1 || !strings.Contains(out, "vstream: vstreamd "+addr+": ") || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want 1 with a message naming vstreamd and %q:\n%s", code, tc.want, out)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v: the refusal was retried", d)
			}
			if strings.Contains(out, tc.token) || strings.Contains(stdout.String(), tc.token) {
				t.Errorf("the token is in the output:\n%s", out)
			}
		})
	}
}
