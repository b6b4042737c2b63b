package claimcheck_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vstream-cdc/vstream/sink/claimcheck"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct{ url, err string }{
		{"file:///var/lib/claims", ""},
		{"s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1", ""},
		{"s3://bucket", ""},
		{"file://host/dir", "a file URL names a local directory"},
		{"file:relative", "want an absolute directory"},
		{"s3:///prefix", "no bucket"},
		{"s3://b/p?endpoint=127.0.0.1:9000", "want http://host:port"},
		{"s3://b/p?secure=false", `unknown query key "secure"`},
		{"gs://b/p", "want file:///path or s3://bucket/prefix"},
	} {
		_, err := claimcheck.Parse(tc.url)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Parse(%q) = %v, want %q", tc.url, err, tc.err)
		}
	}
}

// A directory store's Put replaces an object of the same name whole and leaves no
// temporary file; Get reads it back by its URI.
func TestDirPutReplaces(t *testing.T) {
	dir := t.TempDir()
	st, err := claimcheck.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	u1, err := st.Put(ctx, "sink/cdc.t/abc", []byte("first, longer value"))
	if err != nil {
		t.Fatal(err)
	}
	u2, err := st.Put(ctx, "sink/cdc.t/abc", []byte("second"))
	if err != nil {
		t.Fatal(err)
	}
	if u1 != u2 || u1 != "file://"+filepath.Join(dir, "sink/cdc.t/abc") {
		t.Fatalf("URIs %s, %s", u1, u2)
	}
	got, err := st.Get(ctx, u2)
	if err != nil || string(got) != "second" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "sink/cdc.t"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("%d entries (%v), want the one object", len(entries), err)
	}
	if _, err := st.Get(ctx, "file:///etc/passwd"); err == nil {
		t.Fatal("Get outside the store succeeded")
	}
}
