package plan

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGuarded(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		f       func()
		want    string
		wrapped error
	}{
		{"returns", func() {}, "", nil},
		{"panics with a value", func() { panic("a string") }, "a planner goroutine panicked: a string", nil},
		{"panics with an error", func() { panic(boom) }, "a planner goroutine panicked: boom", boom},
		{"runtime error", func() {
			var s []int
			_ = s[len(os.Args)+1]
		}, "index out of range", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			guarded(tt.f, done)
			err := <-done
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInternal)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "plan.TestGuarded", "the stack shows where it panicked")
			if tt.wrapped != nil {
				assert.ErrorIs(t, err, tt.wrapped)
			}
		})
	}
}

// explodingContext panics when asked whether it is done, as a faulty
// context given WithContext might: the exact search asks from the
// goroutines it starts.
type explodingContext struct{ context.Context }

func (explodingContext) Err() error { panic("context exploded") }

// TestPlanPanicOnSearchGoroutine makes the exact search's goroutines panic:
// Plan must return the panic as an error wrapping ErrInternal, with its
// value and where it happened, rather than end the process, and leave no
// goroutine behind.
func TestPlanPanicOnSearchGoroutine(t *testing.T) {
	f, err := os.Open("testdata/minimalloc/H.1048576.csv")
	require.NoError(t, err)
	defer f.Close()
	reqs, err := ReadCSV(f, 256)
	require.NoError(t, err)
	before := runtime.NumGoroutine()
	res, err := Plan(reqs, WithTries(0), WithCapacity(1<<28), WithContext(explodingContext{context.Background()}))
	require.ErrorIs(t, err, ErrInternal)
	assert.Nil(t, res)
	assert.Contains(t, err.Error(), "a planner goroutine panicked: context exploded")
	assert.Contains(t, err.Error(), "(*stopper).done", "the stack of the panic")
	assert.True(t, strings.HasPrefix(err.Error(), "plan: internal error: "), err.Error())
	// A goroutine that has signalled it is done may take a moment more to
	// exit: wait for the count, a leak keeps it up for good.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "every search goroutine has ended")
}
