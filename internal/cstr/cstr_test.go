package cstr

import (
	"testing"
	"unsafe"
)

func TestCopy(t *testing.T) {
	for _, want := range []string{"", "CUBLAS_STATUS_SUCCESS", "a"} {
		b := append([]byte(want), 0, 'x')
		if got := Copy(uintptr(unsafe.Pointer(&b[0]))); got != want {
			t.Errorf("Copy = %q, want %q", got, want)
		}
	}
	if got := Copy(0); got != "" {
		t.Errorf("Copy(0) = %q, want empty", got)
	}
}
