package pool

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/cudapool/cudapool/internal/bytesize"
)

// Satisfy places every queued request. It first checks that every arena can
// hold everything already placed plus everything queued; if one cannot, it
// places nothing, keeps the queue, and returns an *ExhaustedError; it does
// the same, with an error wrapping ErrInvalidRequest, when buffers that
// share memory by lifetime have sizes that add up past 2^64 B, which Stats
// could not report. Placed
// buffers never move. With WithGuards it then fills their guards; if CUDA
// refuses that, the buffers stay placed and the error says so.
func (p *Pool) Satisfy() error {
	if err := p.valid(); err != nil {
		return err
	}
	err := p.satisfy(false)
	p.logExhausted(err)
	return err
}

// Commit satisfies the queue and locks the layout: WantDevice, WantHost and
// WantManaged fail with ErrCommitted until ReleaseAll.
func (p *Pool) Commit() error {
	if err := p.valid(); err != nil {
		return err
	}
	if err := p.satisfy(true); err != nil {
		p.logExhausted(err)
		return err
	}
	if p.debug {
		fields := []zap.Field{zap.Int("device", p.dev)}
		st := p.Stats()
		for k := range numArenas {
			if a := st.of(k); a.Reserved {
				fields = append(fields, zap.String(k.String()+"_used",
					fmt.Sprintf("%s of %s", bytesize.Format(a.Used), bytesize.Format(a.Capacity))))
			}
		}
		p.log.Debug("pool: committed", fields...)
	}
	return nil
}

// satisfy places the queue and, when commit is set, locks the layout.
func (p *Pool) satisfy(commit bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.alive(); err != nil {
		return err
	}
	var plans [numArenas]layout
	for k, l := range p.arenas {
		if l == nil || len(l.pending) == 0 {
			continue
		}
		out, err := l.plan()
		if err != nil {
			return err
		}
		plans[k] = out
	}
	// Backed before anything is placed: a failure leaves every arena as
	// it was.
	for k, l := range p.arenas {
		if l != nil && len(l.pending) > 0 {
			if err := l.mem.back(plans[k].end); err != nil {
				return err
			}
		}
	}
	var errs []error
	for k, l := range p.arenas {
		if l != nil && len(l.pending) > 0 {
			n := len(l.pending)
			l.apply(plans[k])
			if l.guard > 0 {
				errs = append(errs, p.maintain(l, func() error { return l.fillGuards(p, n) }))
			} else if err := p.annotate(l); err != nil {
				errs = append(errs, err)
			}
		}
	}
	p.committed = p.committed || commit
	return errors.Join(errs...)
}

func (p *Pool) logExhausted(err error) {
	if errors.Is(err, ErrExhausted) {
		p.log.Warn("pool: arena exhausted", zap.Error(err))
	}
}
