package plan

import "time"

// PlanTimed is Plan with its two parts timed apart: finding the layout,
// and the check of it that Plan makes before returning it.
func PlanTimed(reqs []Request, opts ...Option) (find, check time.Duration, err error) {
	cfg, err := configure(opts)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	p, res, _, err := unchecked(reqs, cfg)
	if err != nil {
		return 0, 0, err
	}
	mid := time.Now()
	err = p.check(reqs, cfg.placed, res)
	return mid.Sub(start), time.Since(mid), err
}
