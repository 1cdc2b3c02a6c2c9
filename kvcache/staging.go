package kvcache

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
)

// staging is a ring of pinned host memory that copies to the device are
// queued from. An asynchronous copy reads its source when it runs, not when
// it is queued, so bytes handed to one must stay as they are until it has
// run: each Sync writes what changed into a region of the ring no queued
// copy still reads, and an event recorded after its copies tells when the
// region may be written again. The host waits only when the ring is full
// of copies the device has not reached.
type staging struct {
	mem     []byte
	head    uint64   // where the next region starts, unless it wraps
	pending []region // regions copies may still read, oldest first; cap is the events'
	idle    []cudart.Event
	ev      cudart.Events
	streams cudart.Streams
	dev     int
	stream  cudart.Stream
}

// region is bytes [start, end) of the ring, read by copies queued before ev
// was recorded; with no event (its record failed), until the stream is idle.
type region struct {
	start, end uint64
	ev         cudart.Event
	hasEv      bool
}

// stagingEvents is how many regions may await the device at once: a Sync
// past this many steps ahead of the device waits for the oldest.
const stagingEvents = 8

func newStaging(mem []byte, ev cudart.Events, streams cudart.Streams, dev int, stream cudart.Stream) (*staging, error) {
	s := &staging{mem: mem, ev: ev, streams: streams, dev: dev, stream: stream,
		pending: make([]region, 0, stagingEvents), idle: make([]cudart.Event, 0, stagingEvents)}
	for range stagingEvents {
		e, err := ev.EventCreate(dev)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("kvcache: staging events: %w", err)
		}
		s.idle = append(s.idle, e)
	}
	return s, nil
}

// reserve returns n bytes (0 < n <= len(mem)) at offset off that no queued
// copy reads, waiting for the oldest regions' copies if it must.
func (s *staging) reserve(n uint64) (off uint64, err error) {
	for {
		if len(s.pending) == 0 {
			s.head = 0
			return 0, nil
		}
		if len(s.pending) < stagingEvents {
			oldest, size := s.pending[0].start, uint64(len(s.mem))
			switch {
			case s.head > oldest && s.head+n <= size: // after the newest, before the end
				return s.head, nil
			case s.head > oldest && n <= oldest: // wrapped to the start
				return 0, nil
			case s.head < oldest && s.head+n <= oldest: // wrapped, before the oldest
				return s.head, nil
			}
		}
		if err := s.retire(); err != nil {
			return 0, err
		}
	}
}

// queued records that the copies queued since reserve read [off, off+n).
// If the event cannot be recorded the region is kept until the stream is
// idle, and the error returned.
func (s *staging) queued(off, n uint64) error {
	r := region{start: off, end: off + n}
	s.head = r.end
	e := s.idle[len(s.idle)-1]
	err := s.ev.EventRecord(s.dev, e, s.stream)
	if err == nil {
		s.idle = s.idle[:len(s.idle)-1]
		r.ev, r.hasEv = e, true
	} else {
		err = fmt.Errorf("kvcache: record the page tables' copies: %w", err)
	}
	s.pending = append(s.pending, r)
	return err
}

// retire waits for the oldest region's copies and frees it.
func (s *staging) retire() error {
	r := s.pending[0]
	if r.hasEv {
		if err := s.ev.EventSynchronize(s.dev, r.ev); err != nil {
			return fmt.Errorf("kvcache: wait for the page tables' copies: %w", err)
		}
		s.idle = append(s.idle, r.ev)
	} else if err := s.streams.StreamSynchronize(s.dev, s.stream); err != nil {
		return fmt.Errorf("kvcache: wait for the page tables' copies: %w", err)
	}
	copy(s.pending, s.pending[1:])
	s.pending = s.pending[:len(s.pending)-1]
	return nil
}

// close destroys the events; the copies still queued keep reading the
// ring, which is the pool's until its ReleaseAll or Close.
func (s *staging) close() error {
	var first error
	for _, r := range s.pending {
		if r.hasEv {
			s.idle = append(s.idle, r.ev)
		}
	}
	s.pending = s.pending[:0]
	for _, e := range s.idle {
		if err := s.ev.EventDestroy(s.dev, e); err != nil && first == nil {
			first = fmt.Errorf("kvcache: destroy a staging event: %w", err)
		}
	}
	s.idle = s.idle[:0]
	return first
}
