package openapi

import "testing"

// BenchmarkNewHandler measures building every document for testResources
// (the structured-merge-diff schema is parsed once per process, before the
// first iteration).
func BenchmarkNewHandler(b *testing.B) {
	rs := testResources()
	for b.Loop() {
		if _, err := NewHandler(rs, testInfo); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkV2Protobuf measures the v2 protobuf encoding built on the first
// protobuf request.
func BenchmarkV2Protobuf(b *testing.B) {
	h := newTestHandler(b)
	for b.Loop() {
		if _, err := v2Proto(h.V2().JSON()); err != nil {
			b.Fatal(err)
		}
	}
}
