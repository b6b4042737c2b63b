// Package interop tests vstreamd with Vitess's own client code (vitess.io/vitess): the
// vtgate client and the generated queryservice client stream from a real vstreamd process on
// a real MariaDB or MySQL (VSTREAM_TEST_FLAVOR). It is a module of its own because Vitess's
// generated protos and vstream's register the same protobuf names and cannot share one binary.
package interop
