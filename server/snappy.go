package server

import (
	"io"
	"sync"

	"github.com/golang/snappy"
	"google.golang.org/grpc/encoding"
)

// snappyCompressor is the "snappy" gRPC compressor Vitess clients may ask for: the snappy
// framing format, as Vitess registers it.
type snappyCompressor struct {
	writers sync.Pool
}

func init() {
	encoding.RegisterCompressor(&snappyCompressor{})
}

func (c *snappyCompressor) Name() string { return "snappy" }

func (c *snappyCompressor) Compress(w io.Writer) (io.WriteCloser, error) {
	if sw, ok := c.writers.Get().(*pooledWriter); ok {
		sw.Reset(w)
		return sw, nil
	}
	return &pooledWriter{Writer: snappy.NewBufferedWriter(w), pool: &c.writers}, nil
}

func (c *snappyCompressor) Decompress(r io.Reader) (io.Reader, error) {
	return snappy.NewReader(r), nil
}

type pooledWriter struct {
	*snappy.Writer
	pool *sync.Pool
}

func (w *pooledWriter) Close() error {
	err := w.Writer.Close()
	w.pool.Put(w)
	return err
}
