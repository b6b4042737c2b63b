package sink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// What a record too large for the broker does (Config.Oversize).
const (
	// OversizeFail stops the sink with an error naming the record: nothing after it reaches
	// the broker.
	OversizeFail = "fail"
	// OversizeKeyOnly sends a marker instead: the record's key and headers, an empty (not
	// null) value, and headers saying the value was dropped, its size and why.
	OversizeKeyOnly = "key-only"
	// OversizeClaimCheck writes the value to a store first and then sends a reference record:
	// the key and headers, headers naming the object, and a small JSON value naming it too.
	OversizeClaimCheck = "claim-check"
)

// Headers of a record sent in place of one too large.
const (
	HeaderOversize        = "vstream.oversize"          // key-only or claim-check
	HeaderOversizeBytes   = "vstream.oversize.bytes"    // the record's size as the broker counts it
	HeaderOversizeLimit   = "vstream.oversize.limit"    // the largest the broker takes
	HeaderOversizeReason  = "vstream.oversize.reason"   // why, in words
	HeaderClaimCheckURI   = "vstream.claim-check.uri"   // where the value is
	HeaderClaimCheckBytes = "vstream.claim-check.bytes" // the value's length
	HeaderClaimCheckSHA   = "vstream.claim-check.sha256"
)

// Limiter is a Publisher that can say whether a record fits the broker before it is
// published: size is the record as the broker counts it, limit the largest it takes and what
// names that limit.
type Limiter interface {
	Fit(r *Record) (size, limit int, what string)
}

// ClaimStore keeps the values of records too large for the broker (package sink/claimcheck).
type ClaimStore interface {
	// Put stores data under name, replacing what the name held, and returns its URI once the
	// data is durable.
	Put(ctx context.Context, name string, data []byte) (uri string, err error)
}

// Oversize says what a record too large for the broker does. The zero value fails.
type Oversize struct {
	// Mode is OversizeFail (or empty), OversizeKeyOnly or OversizeClaimCheck.
	Mode string
	// Store keeps the values under OversizeClaimCheck.
	Store ClaimStore
}

// Validate checks the choice.
func (o Oversize) Validate() error {
	switch o.Mode {
	case "", OversizeFail, OversizeKeyOnly:
	case OversizeClaimCheck:
		if o.Store == nil {
			return fmt.Errorf("oversize %s needs a store", o.Mode)
		}
	default:
		return fmt.Errorf("oversize %q: want %s, %s or %s", o.Mode, OversizeFail, OversizeKeyOnly, OversizeClaimCheck)
	}
	return nil
}

// fit returns rec, or what goes to the broker in its place when it is too large. Under
// OversizeFail (and for Publishers that cannot tell) rec goes on, and the Publisher refuses
// it as it always has.
func (r *runner) fit(ctx context.Context, rec *Record) (*Record, error) {
	lim, ok := r.cfg.Publisher.(Limiter)
	if !ok {
		return rec, nil
	}
	size, limit, what := lim.Fit(rec)
	if size <= limit {
		return rec, nil
	}
	mode := r.cfg.Oversize.Mode
	if mode == "" {
		mode = OversizeFail
	}
	if mode == OversizeFail {
		r.cfg.Metrics.oversize(mode, 0)
		return rec, nil
	}
	if rec.Value == nil {
		// A tombstone is its key alone: nothing can be left out of it.
		return nil, Permanent(fmt.Errorf("record %s for topic %s is a tombstone of %d bytes, more than %s of %d: its key alone is too large",
			rec.ID, rec.Topic, size, what, limit))
	}
	reason := fmt.Sprintf("the record is %d bytes, more than %s of %d", size, what, limit)
	out := &Record{Topic: rec.Topic, Key: rec.Key, Value: []byte{}, ID: rec.ID, Volatile: rec.Volatile, PartitionKey: rec.PartitionKey,
		Headers: make(map[string]string, len(rec.Headers)+7)}
	maps.Copy(out.Headers, rec.Headers)
	out.Headers[HeaderOversize] = mode
	out.Headers[HeaderOversizeBytes] = strconv.Itoa(size)
	out.Headers[HeaderOversizeLimit] = strconv.Itoa(limit)
	out.Headers[HeaderOversizeReason] = reason
	if mode == OversizeClaimCheck {
		sum := sha256.Sum256(rec.Value)
		// The name comes from the record's ID, which the stream gives the record every time it
		// delivers it: a record published again after a restart overwrites its object.
		id := sha256.Sum256([]byte(rec.ID))
		name := objectPart(r.cfg.Name) + "/" + objectPart(rec.Topic) + "/" + hex.EncodeToString(id[:])
		uri, err := r.cfg.Oversize.Store.Put(ctx, name, rec.Value)
		if err != nil {
			// A store error is retried as a broker error is: from the last committed position.
			return nil, fmt.Errorf("record %s: %w", rec.ID, err)
		}
		sha := hex.EncodeToString(sum[:])
		out.Headers[HeaderClaimCheckURI] = uri
		out.Headers[HeaderClaimCheckBytes] = strconv.Itoa(len(rec.Value))
		out.Headers[HeaderClaimCheckSHA] = sha
		out.Value = fmt.Appendf(nil, `{"vstream_claim_check":{"uri":%s,"bytes":%d,"sha256":"%s"}}`,
			strconv.Quote(uri), len(rec.Value), sha)
	}
	if s, l, w := lim.Fit(out); s > l {
		return nil, Permanent(fmt.Errorf("record %s for topic %s: %s, and its %s record of %d bytes is more than %s of %d too",
			rec.ID, rec.Topic, reason, mode, s, w, l))
	}
	r.cfg.Metrics.oversize(mode, len(rec.Value))
	r.log.Warn("record too large for the broker: sent "+mode+" instead", "id", rec.ID, "topic", rec.Topic,
		"bytes", size, "limit", limit, "uri", out.Headers[HeaderClaimCheckURI])
	return out, nil
}

// objectPart keeps a name's letters, digits, '.', '-' and '_' for an object name; others
// become '_'.
func objectPart(s string) string {
	return strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			return c
		}
		return '_'
	}, s)
}
