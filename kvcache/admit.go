package kvcache

import "fmt"

// Admit says whether a new sequence with prompt, and room for n >= 0
// tokens after it, fits now, keeping the watermark's pages free
// (WithWatermark) for the running sequences to grow into: nil if it does,
// else a *NoPagesError (matching ErrNoPages) with the pages it needs, those
// free and those the watermark keeps. The prompt's leading pages that
// prefix caching would reuse are not counted as needed. Admit takes
// nothing; a scheduler calls it before Create and Append, as vLLM's does
// before it schedules a waiting request.
//
// A negative n is refused with ErrInvalidOption, and a Cache whose pages
// the pool took back with ErrReleased.
func (c *Cache) Admit(prompt []int32, n int) error {
	if err := c.alive("Admit", -1); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("%w: Admit of a prompt of %d tokens and n = %d: n is the tokens the sequence may generate after the prompt; want n >= 0", ErrInvalidOption, len(prompt), n)
	}
	st := seqState{chain: rootHash}
	hits, _ := c.lookup(&st, prompt)
	need := pagesFor(0, len(prompt)+n-len(hits)*c.layout.PageTokens, c.layout.PageTokens)
	avail := c.available() - c.unheld(hits)
	reserve := int(c.cfg.watermark * float64(c.n))
	if need > avail-reserve {
		return &NoPagesError{Op: "Admit", Seq: -1, Needed: need, Free: avail, Reserve: reserve}
	}
	return nil
}
