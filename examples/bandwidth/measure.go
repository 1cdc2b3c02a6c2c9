package main

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
)

// result is one source's medians.
type result struct {
	source
	via       string
	pin, free time.Duration // of -pin-size; zero when not pinned
	h2d, d2h  float64       // GB/s
}

// warmup is pinned and freed once, untimed, before a source's timed pins,
// so that first-call costs inside CUDA are not counted.
const warmup = 2 << 20

// measure times pinning and freeing c.pinSize bytes, c.reps times, then
// copies of c.size bytes between the source's memory and dev, c.reps times
// each way, calling phase as each part starts.
func measure(rt cudart.Full, s source, dev cudart.DevicePtr, c config, phase func(string)) (result, error) {
	res := result{source: s}
	size, reps := c.size, c.reps
	if s.pinned {
		phase(fmt.Sprintf("pin and free %s, %d times", humanize.IBytes(c.pinSize), reps))
		var err error
		if res.pin, res.free, err = timePin(rt, s, c.pinSize, reps); err != nil {
			return res, fmt.Errorf("pinning: %w", err)
		}
	}
	m, err := s.alloc(rt, size)
	if err != nil {
		return res, err
	}
	res.via = m.via
	phase(fmt.Sprintf("copy %s each way, %d times", humanize.IBytes(size), reps))
	res.h2d, res.d2h, err = timeCopies(rt, m.b, dev, reps)
	return res, errors.Join(err, m.free())
}

func timePin(rt cudart.Full, s source, size uint64, reps int) (pin, free time.Duration, err error) {
	m, err := s.alloc(rt, warmup)
	if err != nil {
		return 0, 0, err
	}
	if err := m.free(); err != nil {
		return 0, 0, err
	}
	pins := make([]time.Duration, reps)
	frees := make([]time.Duration, reps)
	for i := range reps {
		start := time.Now()
		m, err := s.alloc(rt, size)
		if err != nil {
			return 0, 0, err
		}
		pins[i] = time.Since(start)
		start = time.Now()
		if err := m.free(); err != nil {
			return 0, 0, err
		}
		frees[i] = time.Since(start)
	}
	return median(pins), median(frees), nil
}

// timeCopies copies b to dev and back with synchronous cudaMemcpy, which
// returns when the copy is done; one copy each way first is untimed. It
// checks that the bytes came back.
func timeCopies(rt cudart.Full, b []byte, dev cudart.DevicePtr, reps int) (h2d, d2h float64, err error) {
	n := uint64(len(b))
	host, device := cudart.HostMem(b), cudart.DeviceMem(dev, n)
	fill(b)
	toDev := func() error { return rt.Memcpy(0, device, host, cudart.HostToDevice) }
	toHost := func() error { return rt.Memcpy(0, host, device, cudart.DeviceToHost) }
	if err := errors.Join(toDev(), toHost()); err != nil {
		return 0, 0, err
	}
	up, err := timeReps(toDev, reps)
	if err != nil {
		return 0, 0, err
	}
	clear(b)
	down, err := timeReps(toHost, reps)
	if err != nil {
		return 0, 0, err
	}
	if !filled(b) {
		return 0, 0, errors.New("the bytes copied back differ from those copied to the device")
	}
	return gbps(n, up), gbps(n, down), nil
}

func timeReps(f func() error, reps int) (time.Duration, error) {
	times := make([]time.Duration, reps)
	for i := range times {
		start := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		times[i] = time.Since(start)
	}
	return median(times), nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// gbps is decimal gigabytes a second, as CUDA's bandwidth tests report.
func gbps(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds() / 1e9
}

// period is the length of fill's pattern: a prime, so that a copy shifted by
// whole pages does not match it.
const period = 4093

func seed() []byte {
	s := make([]byte, period)
	for i := range s {
		s[i] = byte(i*131 + i>>8 + 1)
	}
	return s
}

// fill writes the pattern over b, doubling what is written at each step:
// far faster than a loop over 1 GiB a byte at a time.
func fill(b []byte) {
	done := copy(b, seed())
	for done < len(b) {
		done += copy(b[done:], b[:done])
	}
}

// filled reports whether b holds fill's pattern.
func filled(b []byte) bool {
	s := seed()
	for len(b) > 0 {
		n := min(len(b), period)
		if !bytes.Equal(b[:n], s[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}
