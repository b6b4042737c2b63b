// Package claimcheck keeps the payloads of records too large for the broker, for the sink's
// claim-check choice (sink.OversizeClaimCheck): the payload is written here under a name
// made from the record's identity, and a small reference record naming it goes to the
// broker instead.
//
// Two stores: a directory (file:///path) and an S3-compatible bucket
// (s3://bucket/prefix?endpoint=https://host:port&region=r), written with minio-go. A Put
// returns only once the object is stored (a file is synced and renamed into place, an S3
// PUT is answered), and a second Put of one name replaces the object whole, so a record
// delivered again after a restart overwrites its object instead of adding one.
package claimcheck

import (
	"bytes"
	"context"

	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Store keeps claim-check payloads.
type Store interface {
	// Put stores data under name (slash-separated, no leading slash), replacing an object of
	// that name, and returns the object's URI.
	Put(ctx context.Context, name string, data []byte) (uri string, err error)
	// Get reads an object back by the URI Put returned.
	Get(ctx context.Context, uri string) ([]byte, error)
}

// Parse checks a store URL without connecting: file:///dir or s3://bucket[/prefix] with the
// query keys endpoint (scheme, host and port; default https://s3.amazonaws.com) and region.
func Parse(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("claim-check store %q: %w", raw, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("claim-check store %q: a file URL names a local directory: file:///path", raw)
		}
		if !strings.HasPrefix(u.Path, "/") || u.Path == "/" {
			return nil, fmt.Errorf("claim-check store %q: want an absolute directory, file:///path", raw)
		}
	case "s3":
		if u.Host == "" {
			return nil, fmt.Errorf("claim-check store %q: no bucket: want s3://bucket/prefix", raw)
		}
		for k := range u.Query() {
			if k != "endpoint" && k != "region" {
				return nil, fmt.Errorf("claim-check store %q: unknown query key %q: want endpoint or region", raw, k)
			}
		}
		if ep := u.Query().Get("endpoint"); ep != "" {
			e, err := url.Parse(ep)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
				return nil, fmt.Errorf("claim-check store %q: endpoint %q: want http://host:port or https://host:port", raw, ep)
			}
		}
	default:
		return nil, fmt.Errorf("claim-check store %q: want file:///path or s3://bucket/prefix", raw)
	}
	return u, nil
}

// Open makes the store of a URL that Parse accepts and checks that it can be written to: the
// directory is made when missing, the bucket must exist. S3 credentials come from the
// environment as AWS tools read them (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or
// MINIO_ROOT_USER and MINIO_ROOT_PASSWORD), then ~/.aws/credentials, then the instance's
// IAM role.
func Open(ctx context.Context, raw string) (Store, error) {
	u, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "file" {
		dir := filepath.Clean(u.Path)
		if err = os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("claim-check store %s: %w", dir, err)
		}
		return &dirStore{dir: dir}, nil
	}
	endpoint, secure := "s3.amazonaws.com", true
	if ep := u.Query().Get("endpoint"); ep != "" {
		e, _ := url.Parse(ep)
		endpoint, secure = e.Host, e.Scheme == "https"
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{}, &credentials.EnvMinio{}, &credentials.FileAWSCredentials{}, &credentials.IAM{},
	})
	cl, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: u.Query().Get("region")})
	if err != nil {
		return nil, fmt.Errorf("claim-check store %s: %w", endpoint, err)
	}
	s := &s3Store{cl: cl, bucket: u.Host, prefix: strings.Trim(u.Path, "/")}
	ok, err := cl.BucketExists(ctx, s.bucket)
	if err != nil {
		return nil, fmt.Errorf("claim-check store s3://%s at %s: %w", s.bucket, endpoint, err)
	}
	if !ok {
		return nil, fmt.Errorf("claim-check store s3://%s at %s: no such bucket: create it first", s.bucket, endpoint)
	}
	return s, nil
}

type dirStore struct{ dir string }

func (d *dirStore) Put(_ context.Context, name string, data []byte) (string, error) {
	full := filepath.Join(d.dir, filepath.FromSlash(name))
	parent := filepath.Dir(full)
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return "", fmt.Errorf("claim-check put %s: %w", full, err)
	}
	// Written aside, synced, then renamed into place: a reader never sees half an object,
	// and one killed half-way leaves the name as it was.
	tmp, err := os.CreateTemp(parent, ".put-*")
	if err != nil {
		return "", fmt.Errorf("claim-check put %s: %w", full, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), full)
	}
	if err != nil {
		_ = os.Remove(tmp.Name()) // the put failed already; a leftover temporary file is harmless
		return "", fmt.Errorf("claim-check put %s: %w", full, err)
	}
	// The rename is durable once the directory is synced: only then may the reference go out.
	if err := syncDir(parent); err != nil {
		return "", fmt.Errorf("claim-check put %s: %w", full, err)
	}
	return (&url.URL{Scheme: "file", Path: full}).String(), nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (d *dirStore) Get(_ context.Context, uri string) ([]byte, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return nil, fmt.Errorf("claim-check get %q: not a file URI", uri)
	}
	rel, err := filepath.Rel(d.dir, u.Path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("claim-check get %q: outside the store %s", uri, d.dir)
	}
	return os.ReadFile(u.Path)
}

type s3Store struct {
	cl             *minio.Client
	bucket, prefix string
}

func (s *s3Store) key(name string) string {
	if s.prefix == "" {
		return name
	}
	return path.Join(s.prefix, name)
}

func (s *s3Store) Put(ctx context.Context, name string, data []byte) (string, error) {
	key := s.key(name)
	if _, err := s.cl.PutObject(ctx, s.bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream"}); err != nil {
		return "", fmt.Errorf("claim-check put s3://%s/%s: %w", s.bucket, key, err)
	}
	return "s3://" + s.bucket + "/" + key, nil
}

func (s *s3Store) Get(ctx context.Context, uri string) ([]byte, error) {
	key, ok := strings.CutPrefix(uri, "s3://"+s.bucket+"/")
	if !ok {
		return nil, fmt.Errorf("claim-check get %q: not in bucket %s", uri, s.bucket)
	}
	obj, err := s.cl.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("claim-check get %s: %w", uri, err)
	}
	defer func() { _ = obj.Close() }()
	var b bytes.Buffer
	if _, err := b.ReadFrom(obj); err != nil {
		return nil, fmt.Errorf("claim-check get %s: %w", uri, err)
	}
	return b.Bytes(), nil
}
