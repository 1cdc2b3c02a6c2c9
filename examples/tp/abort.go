package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cudapool/cudapool/nccl"
)

// cleanupWait bounds the cleanup after a request failed on its
// communicators or past its bound (aborted): its communicators' abort
// (nccl.AbortWait at most), the other groups' requests, which end within
// their own bound, and the freeing of the slots, pools and graphs, which
// synchronises the devices. A kernel the abort did not stop, or a call
// into CUDA or NCCL that never returns, would hold that for ever: past
// cleanupWait the process exits with the request's error instead.
const cleanupWait = nccl.AbortWait + time.Second

// abortSignal is raised by the first request that failed on its
// communicators. A nil one is never raised.
type abortSignal struct {
	once sync.Once
	ch   chan struct{}
	err  error
}

func newAbortSignal() *abortSignal { return &abortSignal{ch: make(chan struct{})} }

// raised reports whether a was raised.
func (a *abortSignal) raised() bool {
	if a == nil {
		return false
	}
	select {
	case <-a.ch:
		return true
	default:
		return false
	}
}

func (a *abortSignal) raise(err error) {
	if a == nil {
		return
	}
	a.once.Do(func() {
		a.err = err
		close(a.ch)
	})
}

// bounded runs serve, and returns its error; once a request has raised a,
// it waits cleanupWait at most for serve to end, saying so on stderr, then
// returns the request's error.
func bounded(a *abortSignal, stderr io.Writer, serve func() error) error {
	done := make(chan error, 1)
	go func() { done <- serve() }()
	select {
	case err := <-done:
		return err
	case <-a.ch:
	}
	fmt.Fprintf(stderr, "tp: a request failed, its communicators aborted: %v\ntp: cleaning up (at most %v)...\n", a.err, cleanupWait)
	t := time.NewTimer(cleanupWait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%w (the cleanup had not ended %v after: exiting without it)", a.err, cleanupWait)
	}
}
