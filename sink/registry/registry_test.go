package registry

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/vstream-cdc/vstream/sink"
)

// envelope is a Debezium-shaped value schema of table db.items (topic srv.db.items) whose
// row record has the given fields (JSON text of Avro fields).
func envelope(fields string) string {
	return `{"type":"record","name":"Envelope","namespace":"srv.db.items","fields":[
 {"name":"before","type":["null",{"type":"record","name":"Value","fields":[` + fields + `]}],"default":null},
 {"name":"after","type":["null","Value"],"default":null},
 {"name":"op","type":"string"}]}`
}

const (
	idName = `{"name":"id","type":"int"},{"name":"name","type":["null","string"],"default":null}`
	// noteAdded adds a nullable column: every level but NONE takes it... except FORWARD
	// readers, which ignore the new field, so it is compatible both ways.
	noteAdded = idName + `,{"name":"note","type":["null","string"],"default":null}`
	// idText changes id from int to string: neither old readers nor new ones resolve it.
	idText = `{"name":"id","type":"string"},{"name":"name","type":["null","string"],"default":null}`
	// nameRequired adds a field without a default: new readers cannot read old records.
	nameRequired = idName + `,{"name":"qty","type":"long"}`
	// nameDropped removes name, which had a default: old readers fill it in (FORWARD holds),
	// and new readers ignore it (BACKWARD holds).
	nameDropped = `{"name":"id","type":"int"}`
)

func newRegistry(t *testing.T, opts ...srfake.Option) (*srfake.Registry, *Registry) {
	t.Helper()
	fake := srfake.New(opts...)
	t.Cleanup(fake.Close)
	r, err := New(Options{URLs: []string{fake.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	return fake, r
}

func framed(id int32, datum ...byte) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, datum...)
}

// TestRegisterEvolution: a table's value schema registered as version 1, then each change of
// its columns held against the subject's compatibility level: what the level allows becomes
// version 2 and reframes records with its id, what it refuses is a permanent error naming
// the table, subject, level, version and field, and registers nothing.
func TestRegisterEvolution(t *testing.T) {
	const subject = "cdc.db.items-value"
	for _, tc := range []struct {
		name  string
		level sr.CompatibilityLevel
		next  string
		// want is empty when the change is registered; else words the error must hold.
		want []string
	}{
		{"backward add nullable column", sr.CompatBackward, noteAdded, nil},
		{"backward type change", sr.CompatBackward, idText, []string{"table db.items", "subject " + subject, "not BACKWARD compatible with version 1",
			"field before.id: int cannot be read as string"}},
		{"backward new field without default", sr.CompatBackward, nameRequired, []string{"field before.qty is missing from the writer's schema and has no default"}},
		{"backward drop column with default", sr.CompatBackward, nameDropped, nil},
		{"forward drop column with default", sr.CompatForward, nameDropped, nil},
		{"forward type change", sr.CompatForward, idText, []string{"not FORWARD compatible", "a reader with the old schema cannot read the new records", "field before.id: string cannot be read as int"}},
		{"full new field without default", sr.CompatFull, nameRequired, []string{"not FULL compatible", "before.qty"}},
		{"none type change", sr.CompatNone, idText, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, r := newRegistry(t, srfake.WithGlobalCompat(tc.level))
			ctx := context.Background()
			if err := r.Register(ctx, "cdc.db.items", true, 1, []byte(envelope(idName))); err != nil {
				t.Fatal(err)
			}
			v1, ok := fake.GetSchema(subject, 1)
			if !ok {
				t.Fatalf("%s has no version 1", subject)
			}
			got, err := r.Reframe(framed(1, 42))
			if err != nil || !slicesEqual(got, framed(int32(v1.ID), 42)) {
				t.Fatalf("reframe with version 1: %x, %v; want id %d", got, err, v1.ID)
			}
			err = r.Register(ctx, "cdc.db.items", true, 2, []byte(envelope(tc.next)))
			v2, has2 := fake.GetSchema(subject, 2)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !has2 || v2.ID == v1.ID {
					t.Fatalf("version 2: %v, id %d (version 1's: %d)", has2, v2.ID, v1.ID)
				}
				if got, err = r.Reframe(framed(2, 7, 8)); err != nil || !slicesEqual(got, framed(int32(v2.ID), 7, 8)) {
					t.Fatalf("reframe with version 2: %x, %v", got, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("registered (version 2: %v); want refused", has2)
			}
			if !sink.IsPermanent(err) {
				t.Errorf("not permanent: %v", err)
			}
			if _, ok := errors.AsType[*IncompatibleError](err); !ok {
				t.Errorf("not an IncompatibleError: %T", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if has2 {
				t.Errorf("version 2 was registered")
			}
		})
	}
}

func slicesEqual(a, b []byte) bool { return string(a) == string(b) }

// countRequests counts the registry's requests.
func countRequests(fake *srfake.Registry) *atomic.Int64 {
	var n atomic.Int64
	fake.Intercept(func(http.ResponseWriter, *http.Request) bool {
		n.Add(1)
		return false
	})
	return &n
}

// TestKnownSchemas: a schema the registry holds (a restart, another sink) gets its id by
// look-up without a new version; a new stream of the same process, whose ids start again at
// 1, asks the registry nothing for schemas it registered; Reframe never asks it.
func TestKnownSchemas(t *testing.T) {
	fake, r := newRegistry(t)
	ctx := context.Background()
	key := `{"type":"record","name":"Key","namespace":"srv.db.items","fields":[{"name":"id","type":"int"}]}`
	if err := r.Register(ctx, "cdc.db.items", false, 1, []byte(key)); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ctx, "cdc.db.items", true, 2, []byte(envelope(idName))); err != nil {
		t.Fatal(err)
	}
	k1, _ := fake.GetSchema("cdc.db.items-key", 1)
	v1, _ := fake.GetSchema("cdc.db.items-value", 1)

	// Another sink process: its look-up finds both.
	r2, err := New(Options{URLs: []string{fake.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.Register(ctx, "cdc.db.items", true, 1, []byte(envelope(idName))); err != nil {
		t.Fatal(err)
	}
	if got, _ := r2.Reframe(framed(1)); !slicesEqual(got, framed(int32(v1.ID))) {
		t.Fatalf("second process reframes with %x, want id %d", got, v1.ID)
	}
	if _, ok := fake.GetSchema("cdc.db.items-value", 2); ok {
		t.Fatal("the same schema made a version 2")
	}

	// A new stream in the same process numbers the same schemas the other way round.
	n := countRequests(fake)
	if err := r.Register(ctx, "cdc.db.items", true, 1, []byte(envelope(idName))); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ctx, "cdc.db.items", false, 2, []byte(key)); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if got, err := r.Reframe(framed(1, 1)); err != nil || !slicesEqual(got, framed(int32(v1.ID), 1)) {
			t.Fatalf("value reframed %x, %v", got, err)
		}
		if got, err := r.Reframe(framed(2, 2)); err != nil || !slicesEqual(got, framed(int32(k1.ID), 2)) {
			t.Fatalf("key reframed %x, %v", got, err)
		}
	}
	if n.Load() != 0 {
		t.Fatalf("%d registry requests for schemas already known and records", n.Load())
	}
}

// TestReframeErrors: a record in no Confluent frame, or framed with an id the stream never
// announced, is an error; a null (tombstone) value passes.
func TestReframeErrors(t *testing.T) {
	_, r := newRegistry(t)
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"short", []byte{0, 1}, "not in Confluent's Avro frame"},
		{"magic", []byte{1, 0, 0, 0, 1, 2}, "not in Confluent's Avro frame"},
		{"unannounced", framed(9, 1), "schema id 9 was not announced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.Reframe(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	if got, err := r.Reframe(nil); err != nil || got != nil {
		t.Fatalf("nil: %v %v", got, err)
	}
}

// TestRegistryRefuses: a registry that refuses a registration as incompatible (HTTP 409,
// error code 409, as Confluent's does when its own check fails) stops the sink with its
// message, and one that says the schema is incompatible when asked (is_compatible false,
// with verbose messages) does too, before any registration.
func TestRegistryRefuses(t *testing.T) {
	respond := func(w http.ResponseWriter, status int, body any) {
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
	for _, tc := range []struct {
		name      string
		intercept srfake.Interceptor
		want      string
	}{
		{"on register", func(w http.ResponseWriter, req *http.Request) bool {
			if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/versions") && strings.HasPrefix(req.URL.Path, "/subjects/") {
				respond(w, http.StatusConflict, sr.ResponseError{ErrorCode: 409, Message: "Schema being registered is incompatible with an earlier schema for subject \"cdc.db.items-value\""})
				return true
			}
			return false
		}, "the registry refused the new schema srv.db.items.Envelope of subject cdc.db.items-value as incompatible: Schema being registered is incompatible"},
		{"on check", func(w http.ResponseWriter, req *http.Request) bool {
			if strings.HasPrefix(req.URL.Path, "/compatibility/") {
				if req.URL.Query().Get("verbose") != "true" {
					respond(w, http.StatusBadRequest, sr.ResponseError{ErrorCode: 400, Message: "want verbose"})
					return true
				}
				respond(w, http.StatusOK, sr.CheckCompatibilityResult{Is: false, Messages: []string{"READER_FIELD_MISSING_DEFAULT_VALUE at /fields/0"}})
				return true
			}
			return false
		}, "table db.items: the new schema srv.db.items.Envelope of subject cdc.db.items-value is not BACKWARD compatible: READER_FIELD_MISSING_DEFAULT_VALUE at /fields/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, r := newRegistry(t)
			ctx := context.Background()
			if err := r.Register(ctx, "cdc.db.items", true, 1, []byte(envelope(idName))); err != nil {
				t.Fatal(err)
			}
			fake.Intercept(tc.intercept)
			err := r.Register(ctx, "cdc.db.items", true, 2, []byte(envelope(noteAdded)))
			if err == nil || !sink.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v (permanent %v), want %q", err, sink.IsPermanent(err), tc.want)
			}
		})
	}
}

// TestAuthAndReachability: basic credentials reach the registry; wrong ones and a registry
// that cannot be reached are errors that a retry may cure (not permanent), and the password
// is not in them.
func TestAuthAndReachability(t *testing.T) {
	const user, pass = "sink", "registry-pass-Wq3"
	fake := srfake.New(srfake.WithAuth("Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))))
	t.Cleanup(fake.Close)
	ctx := context.Background()
	for _, tc := range []struct {
		name, url, user, pass string
		ok                    bool
	}{
		{"right", fake.URL(), user, pass, true},
		{"wrong password", fake.URL(), user, "bad-" + pass, false},
		{"unreachable", "http://127.0.0.1:1", user, pass, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(Options{URLs: []string{tc.url}, User: tc.user, Password: tc.pass})
			if err != nil {
				t.Fatal(err)
			}
			err = r.Register(ctx, "cdc.db.items", true, 1, []byte(envelope(idName)))
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || sink.IsPermanent(err) || strings.Contains(err.Error(), pass) {
				t.Fatalf("err %v (permanent %v); want a retryable error without the password", err, sink.IsPermanent(err))
			}
		})
	}
	if _, err := New(Options{URLs: []string{fake.URL()}, User: "u", Token: "t"}); err == nil {
		t.Fatal("a user and a token were both taken")
	}
}

// TestTransitive: a schema compatible with the latest version but not with an earlier one
// passes BACKWARD and is refused by BACKWARD_TRANSITIVE, naming the earlier version.
func TestTransitive(t *testing.T) {
	const (
		v1 = `{"name":"id","type":"int"},{"name":"a","type":"string"}`
		// v2 drops a: its readers ignore it in v1's records.
		v2 = `{"name":"id","type":"int"}`
		// v3 brings a back as an int with a default: v2's records lack it (the default
		// fills in), v1's hold a string that an int reader cannot take.
		v3 = `{"name":"id","type":"int"},{"name":"a","type":"int","default":0}`
	)
	for _, tc := range []struct {
		level sr.CompatibilityLevel
		want  string
	}{
		{sr.CompatBackward, ""},
		{sr.CompatBackwardTransitive, "not BACKWARD_TRANSITIVE compatible with version 1: a reader with the new schema cannot read the old records: field before.a: string cannot be read as int"},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			fake, r := newRegistry(t, srfake.WithGlobalCompat(tc.level))
			ctx := context.Background()
			for i, f := range []string{v1, v2} {
				if err := r.Register(ctx, "cdc.db.items", true, int32(i+1), []byte(envelope(f))); err != nil {
					t.Fatalf("version %d: %v", i+1, err)
				}
			}
			err := r.Register(ctx, "cdc.db.items", true, 3, []byte(envelope(v3)))
			_, has3 := fake.GetSchema("cdc.db.items-value", 3)
			if tc.want == "" {
				if err != nil || !has3 {
					t.Fatalf("version 3 %v: %v", has3, err)
				}
				return
			}
			if err == nil || has3 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("version 3 %v, err %v; want %q", has3, err, tc.want)
			}
		})
	}
}
